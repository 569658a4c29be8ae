"""Helpers shared by the test suite (imported as ``tests.support``; pytest's
``pythonpath = ["."]`` puts the repository root on ``sys.path``)."""
