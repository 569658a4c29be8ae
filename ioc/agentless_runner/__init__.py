"""Code that runs on the target, inside a mitogen context.

Imports only the stdlib, ``mitogen.core``, jinja2 and markupsafe, and runs on
Python 3.9+. The entry point is :func:`ioc.agentless_runner.batch.run_batch`.
"""
