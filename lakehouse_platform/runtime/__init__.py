"""What the operating layers run against a deployed platform: maintenance, signals, backups (orchestration,
observability, recovery). Plain Python over the stack's own clients; the services that run them on a
schedule are ordinary service definitions (lakehouse_platform/services/)."""
