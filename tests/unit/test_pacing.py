"""The pacing of bootstraps (ioc/transport/pacing.py): the window follows progress."""
from __future__ import annotations

import threading

import pytest

from ioc.errors import ConnectionSetupError
from ioc.transport import pacing
from ioc.transport.pacing import Pacer, Pacing, from_environment, retry_pause


def finish(pacer: Pacer, seconds: float, ok=True) -> None:
    pacer.admit()
    pacer._finished(seconds, ok)


def test_quick_bootstraps_open_the_window_up_to_forks():
    pacer = Pacer(initial=2, ceiling=4, bound=60)
    for _ in range(5):
        finish(pacer, 1.0)
    assert pacer.window == 4 and pacer.base == 1.0


def test_bootstraps_that_slow_each_other_down_close_it_to_the_floor():
    pacer = Pacer(initial=8, ceiling=100, bound=60)
    finish(pacer, 1.0)  # base: 1 s; 9 in flight now allowed
    assert pacer.window == 9
    finish(pacer, 3.0)  # between 2 and 4 times base: hold
    assert pacer.window == 9
    for _ in range(10):
        finish(pacer, 5.0)  # over 4 times base: one fewer each
    assert pacer.window == pacing.FLOOR


def test_near_the_bound_or_failed_halves_it():
    pacer = Pacer(initial=16, ceiling=100, bound=60)
    finish(pacer, 31.0)  # over half the bound
    assert pacer.window == 8
    finish(pacer, 0.5, ok=False)  # reset or timed out
    assert pacer.window == 4
    finish(pacer, 0.5, ok=None)  # a refused login says nothing about load
    assert pacer.window == 4


def test_slow_but_steady_bootstraps_do_not_grow_it_past_a_sixth_of_the_bound():
    pacer = Pacer(initial=8, ceiling=100, bound=60)
    for _ in range(5):
        finish(pacer, 12.0)  # within 2 x base, but over bound / 6
    assert pacer.window == 8


def test_admission_waits_for_room_and_a_slot_is_given_back_once():
    pacer = Pacer(initial=1, ceiling=1, bound=60)
    first = pacer.admit()
    admitted = threading.Event()
    waiter = threading.Thread(target=lambda: (pacer.admit(), admitted.set()))
    waiter.start()
    assert not admitted.wait(0.2)
    assert first.done(True) and not first.done(True)
    assert admitted.wait(5)
    waiter.join()
    assert pacer.in_flight == 1


def test_retry_pauses_are_ansibles():
    assert [retry_pause(a) for a in range(7)] == [0, 1, 3, 7, 15, 30, 30]


def test_settings_come_from_the_environment():
    assert from_environment({}) == Pacing(60.0, 8)
    assert from_environment({"IOC_BOOTSTRAP_TIMEOUT": "120", "IOC_CONNECT_WINDOW": "32"}) \
        == Pacing(120.0, 32)
    with pytest.raises(ConnectionSetupError):
        from_environment({"IOC_CONNECT_WINDOW": "0"})
