"""The shared aws kit: network, KMS-encrypted buckets and logs, roles, ECS tasks and services, alarms, one-off tasks.

Each piece is a ``ComponentResource`` ``(name, args, opts)`` or a function of typed arguments; none knows a service
of the platform. The services' aws halves are made of them, and the aws target assembles them.
"""
