"""How the controller reaches targets: everything between a host's variables and a
runner call.

* :mod:`ioc.transport.spec` -- connection and become settings from a host's
  variables (pure values);
* :mod:`ioc.transport.connector` -- the mitogen broker and one context (a
  runner in RAM on the target) per host and identity: ssh, local, sudo/su
  children, ``mitogen_via`` chains, retries;
* :mod:`ioc.transport.bootstrap` -- getting the runner's code onto a new
  context in its first message, without an import round trip;
* :mod:`ioc.transport.report` -- what crossed the network, for ``-v`` and
  the benchmarks;
* :mod:`ioc.transport.cachefile` -- what the controller keeps between runs
  (import scans of the code it ships), in the user's cache directory.

The controller (``ioc.controller``) decides *what* to run; this package only
carries it.
"""
