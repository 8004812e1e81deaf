"""The unit, toolchain and end-to-end tests; their layout mirrors the packages they test (lakehouse_platform/)."""
