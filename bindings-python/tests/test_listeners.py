"""A breaker listener never changes a call (DESIGN §1): an ``Exception`` in a
listener is logged and the call's result, outcome and the other listeners go
on; ``KeyboardInterrupt`` / ``SystemExit`` are re-raised once the operation
that noticed the transition is complete, never swallowed."""

import asyncio
import logging

import pytest

from seawall import CircuitBreaker, CircuitOpenError, CountWindow
from conftest import FakeClock


def one_call_breaker(*listeners):
    # Opens on its first failure: the transition happens while that call is recorded.
    return CircuitBreaker(window=CountWindow(1), minimum_calls=1, clock=FakeClock(), listeners=listeners)


def fail():
    raise ConnectionError("down")


def test_a_raising_listener_leaves_the_callers_error_and_other_listeners_alone(caplog):
    heard = []

    def bad(b, old, new):
        raise RuntimeError("listener bug")

    b = one_call_breaker(bad, lambda br, old, new: heard.append((old.value, new.value)))
    with caplog.at_level(logging.ERROR, logger="seawall"):
        with pytest.raises(ConnectionError):  # the caller's own error, not the listener's
            b.call(fail)
    assert heard == [("closed", "open")]
    assert "listener bug" in caplog.text
    assert b.metrics()["totals"]["failures"] == 1
    with pytest.raises(CircuitOpenError):
        b.call(lambda: "rejected")


def test_a_raising_listener_leaves_a_success_a_success():
    b = one_call_breaker(lambda *a: 1 / 0)
    b.force_open()
    b.reset()  # both transitions reach the raising listener
    assert b.call(lambda: "value") == "value"
    assert b.metrics()["totals"]["successes"] == 1


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_in_a_listener_is_raised_after_the_outcome_is_recorded(interrupt):
    heard = []

    def stop(b, old, new):
        raise interrupt()

    b = one_call_breaker(stop, lambda br, old, new: heard.append(new.value))
    with pytest.raises(interrupt):
        b.call(fail)
    # The state change is complete: recorded, open, and every listener heard it.
    assert b.state == "open"
    assert b.metrics()["totals"]["failures"] == 1
    assert heard == ["open"]


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_in_a_listener_reaches_every_form(interrupt):
    def stop(b, old, new):
        raise interrupt()

    b = one_call_breaker(stop)

    @b
    def decorated():
        raise ConnectionError("down")

    with pytest.raises(interrupt):
        decorated()
    with pytest.raises(interrupt):
        b.reset()
    with pytest.raises(interrupt):
        with b:
            raise ConnectionError("down")
    with pytest.raises(interrupt):
        b.force_open()

    async def main():
        async with b:
            pass

    with pytest.raises(CircuitOpenError):  # forced open: no transition, no listener
        asyncio.run(main())
    assert b.metrics()["half_open_in_flight"] == 0
