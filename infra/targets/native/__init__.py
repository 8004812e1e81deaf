"""The native target: the platform as real local processes on 127.0.0.1 (see target.py)."""

from infra.targets.native.target import NativeTarget

__all__ = ["NativeTarget"]
