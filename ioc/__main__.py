"""``python -m ioc``: the same as ``ioc-run``."""
import sys

from ioc.cli import main

sys.exit(main())
