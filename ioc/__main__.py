"""``python -m ioc``: the same as ``ioc-run``."""
import sys

from ioc.warm import main

sys.exit(main())
