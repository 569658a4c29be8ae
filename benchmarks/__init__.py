"""Benchmarks and the tools they need (not part of the installed ``ioc`` package).

* :mod:`benchmarks.delayproxy` -- a TCP relay that adds a one-way delay in each
  direction and counts round trips; used by ``tests/integration/test_latency.py``
  and by the benchmark runner.
* :mod:`benchmarks.run` -- ``python -m benchmarks.run [--quick]``: ioc against
  Ansible and Mitogen side by side; writes ``docs/benchmarks.md``.
"""
