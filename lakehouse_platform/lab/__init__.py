"""The lab on a real Docker engine: its images (``images``), the build driver (``driver``) and the container
runner that starts the program's own rendered containers (``runner``); ``commands``: ``lakehouse lab`` and
``lakehouse engine``."""
