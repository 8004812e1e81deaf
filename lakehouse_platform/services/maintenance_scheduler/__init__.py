"""The maintenance scheduler: the platform runs the spec's maintenance on its cron schedules (orchestration).

Its whole definition is ``definition.py`` (the registry's line imports it); importing the package imports nothing.
"""
