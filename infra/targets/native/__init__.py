"""The native target: the platform as real local processes on 127.0.0.1.

target.py (NativeTarget), local_service.py (the process resource), artifacts.py (what the
processes are built from), stack.py (up/down/restart/verify from the command line).
"""
