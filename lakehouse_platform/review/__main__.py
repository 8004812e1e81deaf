"""``python -m lakehouse_platform.review``: the ownership and change review's command line."""

import sys

from lakehouse_platform.review.ownership import main

sys.exit(main())
