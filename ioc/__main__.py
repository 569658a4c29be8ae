"""``python -m ioc``: the same as ``ioc-run``."""
from ioc.warm import run_command

run_command()
