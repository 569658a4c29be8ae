"""The runner's entry point: the target's Python is checked before the runner is imported.

mitogen starts on Pythons older than the runner's (2.7, 3.6): importing the
runner there fails deep inside jinja2 or the runner's own syntax. This module
parses and runs on any of them, so an old Python is answered with what it is
(one line on the controller) instead of an import's traceback.
"""
import sys

import mitogen.core

#: The oldest Python the runner runs on.
MINIMUM = (3, 9)


@mitogen.core.takes_econtext
def run_batch(batch, sender, econtext=None):
    """``ioc.agentless_runner.batch.run_batch`` on a Python new enough for it.

    On an older one nothing is imported and the answer is
    ``{"python_too_old": "3.6.15", "executable": ..., "minimum": "3.9"}``.
    """
    if _too_old():
        # text (u"") so that Python 2's answer is str, not bytes, on the controller
        return {u"python_too_old": u"%d.%d.%d" % tuple(sys.version_info[:3]),
                u"executable": (sys.executable or "?").decode("utf-8", "replace")
                if isinstance(sys.executable, bytes) else sys.executable,
                u"minimum": u"%d.%d" % MINIMUM}
    from ioc.agentless_runner import batch as runner
    return runner.run_batch(batch, sender, econtext=econtext)


def runner_info():
    """Where this runner came from and what it runs on: the first call of a new
    connection (``ioc.transport.connector``), answered on any Python."""
    info = {u"python": list(sys.version_info[:3]), u"executable": sys.executable}
    if not _too_old():
        from ioc.agentless_runner import batch as runner
        info.update(runner.runner_info())
    return info


def _too_old():
    return tuple(sys.version_info[:2]) < MINIMUM
