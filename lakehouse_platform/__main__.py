"""``python -m lakehouse_platform``: the ``lakehouse`` command line (``lakehouse_platform.cli``)."""

import sys

from lakehouse_platform.cli import main

sys.exit(main())
