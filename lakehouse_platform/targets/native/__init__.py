"""The native target: the platform as real local processes on 127.0.0.1.

target.py (NativeTarget: one LocalService per service, in dependency order), local_service/ (the
process resource), tasks.py (idempotent post-start steps).
"""
