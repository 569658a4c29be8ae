"""``--step``: the question before each task, asked where the linear strategy asks it.

ansible-playbook ``--step`` asks once per task, for every host whose next
task it is, before anything of the task runs (its ``when`` included):
``Perform task: TASK: <name> (N)o/(y)es/(c)ontinue:``. "y" runs it, "c" runs
it and ends the asking, anything else skips it on those hosts without a
trace (no banner, no result, nothing registered). Meta tasks are not asked
about. ``HANDLER: <name>`` for handlers.

Each runner stops before a task and sends an ``ask`` event (see
``HostRun.take_step``); the replay (:mod:`ioc.replay`) starts a step only
once every host in the batch has reported where it stands, so when it
starts the step of that task, every host that reaches the task is waiting
on its ``ask``: :class:`Stepper` asks the user once and answers them all.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Sequence, Set, Tuple

from ioc.errors import IocError

Key = Tuple[int, ...]


class NoAnswer(IocError):
    """Standard input ended while ``--step`` waited for an answer."""

    #: ansible-playbook's exit code here (its ``input()`` raises EOFError:
    #: "Unexpected Exception", with a traceback ioc spares the user).
    exit_code = 250


class Stepper:
    """The ``--step`` state of a run: whether it still asks, and the waiting runners."""

    def __init__(self, banner: Callable[[str], None],
                 read: Callable[[str], str] = input) -> None:
        #: Ansible's ``display.banner``: the question again, with its stars.
        self.banner = banner
        #: Ansible's ``display.prompt``: ``input`` (the prompt on stdout).
        self.read = read
        #: False once the user answered "c": no more questions in the run.
        self.on = True
        #: Runners waiting for an answer: (host, key) -> reply.
        self._waiting: Dict[Tuple[str, Key], Callable[[str], Any]] = {}
        #: (host, key) the user said no to (a per-item loop's later rounds skip them).
        self.declined: Set[Tuple[str, Key]] = set()

    def waiting(self, host: str, event: Dict[str, Any]) -> None:
        """``host``'s runner waits on ``event`` (an ``ask``) for an answer."""
        self._waiting[(host, tuple(event["k"]))] = event.pop("reply")

    def decide(self, key: Key, hosts: Sequence[str], label: str) -> bool:
        """The step of ``key`` starts on ``hosts``: ask (unless "c" ended the
        asking), answer every one of them that waits; True if the task runs."""
        replies = [(host, self._waiting.pop((host, tuple(key)))) for host in hosts
                   if (host, tuple(key)) in self._waiting]
        if not replies:
            return True  # no runner asks (a meta task; "c" answered in an earlier step)
        answer = self._ask(label) if self.on else "c"
        for host, reply in replies:
            if answer == "n":
                self.declined.add((host, tuple(key)))
            reply(answer)
        return answer != "n"

    def _ask(self, label: str) -> str:
        msg = "Perform task: %s (N)o/(y)es/(c)ontinue: " % label
        try:
            response = self.read(msg).lower()
        except EOFError:
            raise NoAnswer("--step: standard input ended before the answer to %r" % msg.strip())
        self.banner(msg)
        if response in ("y", "yes"):
            return "y"
        if response in ("c", "continue"):
            self.on = False
            return "c"
        return "n"
