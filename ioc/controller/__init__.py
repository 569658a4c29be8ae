"""The controller: runs a planned play's steps on its hosts and turns what they report into callbacks.

* :mod:`ioc.controller.playbook` -- one run of a playbook: plays in order,
  what outlives a play (facts, registered values, failed hosts), the exit code;
* :mod:`ioc.controller.play` -- one play: a call per host per batch, the
  controller steps, the decisions taken at step boundaries;
* :mod:`ioc.controller.state` -- what it keeps between steps: each host's
  state, each step's outcome, the run's options, the play's context;
* :mod:`ioc.controller.sink` -- replayed events into callbacks and recap counts;
* :mod:`ioc.controller.dispatch` -- the calls of one step, all in flight at
  once, their events into one stream;
* :mod:`ioc.controller.payloads`, :mod:`~ioc.controller.lookups`,
  :mod:`~ioc.controller.closure` -- what a host's call must carry (controller
  files, lookup answers, the variables its tasks read);
* :mod:`ioc.controller.fetched` -- files ``fetch`` brings back.
"""
