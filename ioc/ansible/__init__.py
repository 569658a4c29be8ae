"""ioc inside Ansible: the ``mitogen_batch`` strategy, and Ansible's modules for the runner.

This is the only package of ioc that imports ``ansible`` (DESIGN §1), and
importing it (or any of its modules) does not: each imports ``ansible``
where it is used, so the dispatcher subprocess and ``--strategy-dir`` never
load it. ``strategy_plugin/mitogen_batch.py`` is a shim over
:mod:`ioc.ansible.strategy`.

Two processes run a play. The **parent** is ``ansible-playbook`` itself:

* :mod:`~ioc.ansible.version` — the supported ansible-core releases, the gate;
* :mod:`~ioc.ansible.convert` — Ansible's tasks and blocks → ioc's IR, and
  which tasks ioc does not run natively (and why);
* :mod:`~ioc.ansible.varsfiles` — ``vars_files``, per host where templated;
* :mod:`~ioc.ansible.play` — a play as linear's iterator walks it → ioc's
  Play and Plan;
* :mod:`~ioc.ansible.strategy` — ``StrategyModule`` and one native play's run;
* :mod:`~ioc.ansible.state` — the play the parent's rooms below share;
* :mod:`~ioc.ansible.events` — replayed events → Ansible's callbacks, stats,
  variables;
* :mod:`~ioc.ansible.results` — ioc's result dicts ↔ Ansible's task results
  (2.19 and 2.21 shapes);
* :mod:`~ioc.ansible.ansible_tasks` — running a task or handler that left
  the batch with Ansible's own task machinery;
* :mod:`~ioc.ansible.includes` — what dynamic includes load, spliced in;
* :mod:`~ioc.ansible.hostvars` — the inventory and host variables, exported.

The **dispatcher** (``python -m ioc.ansible --serve``) owns mitogen's broker
and runs ioc's play executor:

* :mod:`~ioc.ansible.pipe` — the pickle pipe between the two, both ends;
* :mod:`~ioc.ansible.dispatcher` — the executor's ``mitogen_batch`` hooks;
* :mod:`~ioc.ansible.through_ansible` — who reaches a task that leaves the
  batch, and applying Ansible's outcome as the runner would.

And for both front ends, :mod:`~ioc.ansible.modules` packages Ansible's own
module code for the runner. ``python -m ioc.ansible`` is :mod:`~ioc.ansible.__main__`.
"""
