"""Waits beyond the exponential family (DESIGN §4): none, constant, linear, a
list, a function of (attempt, exception); and test mode (no sleeping, capped
attempts). Each delay is checked through ``before_sleep``, against values
worked out by hand; the core still decides attempts, deadline and hints."""

import asyncio
import datetime

import pytest

import seawall
from seawall import Backoff, Retry


def delays_of(backoff, attempts=5, exc=ValueError, **kw):
    """The delays a retry of an always-failing call sleeps, in seconds."""
    seen = []
    retry = Retry(attempts=attempts, backoff=backoff, before_sleep=lambda s: seen.append(round(s.delay, 9)), **kw)
    calls = []

    def fail():
        calls.append(1)
        raise exc("down")

    with pytest.raises(exc):
        retry(fail)()
    assert len(calls) == attempts
    return seen


@pytest.fixture(autouse=True)
def no_sleeping():
    seawall.set_testing(True)  # the delays are checked, not slept
    yield
    seawall.set_testing(False)


def test_base_zero_and_zero_mean_no_wait():
    assert Backoff(base=0).delay(4) == 0.0
    assert delays_of(Backoff(base=0)) == [0.0] * 4
    assert delays_of(0) == [0.0] * 4
    assert delays_of(datetime.timedelta(0)) == [0.0] * 4


def test_a_constant_wait():
    assert delays_of(0.25) == [0.25] * 4
    assert delays_of(datetime.timedelta(milliseconds=40)) == [0.04] * 4


def test_a_linear_wait_is_capped():
    # 0.1 + 0.2 * (n - 1): 0.1, 0.3, 0.5, then 0.6 (the cap).
    assert delays_of(seawall.linear_backoff(0.1, 0.2, max=0.6)) == [0.1, 0.3, 0.5, 0.6]
    assert delays_of(seawall.linear_backoff(datetime.timedelta(seconds=1), 0)) == [1.0] * 4


def test_a_list_of_delays_repeats_its_last():
    assert delays_of([0.1, 0.5]) == [0.1, 0.5, 0.5, 0.5]
    assert delays_of((datetime.timedelta(seconds=2),), attempts=3) == [2.0, 2.0]


def test_a_function_of_attempt_and_exception():
    seen = []

    def wait(attempt, exc):
        seen.append((attempt, type(exc).__name__))
        return attempt * 0.01 if isinstance(exc, ConnectionError) else datetime.timedelta(seconds=1)

    assert delays_of(wait, attempts=3, exc=ConnectionError) == [0.01, 0.02]
    assert seen == [(1, "ConnectionError"), (2, "ConnectionError")]
    assert delays_of(wait, attempts=2, exc=KeyError) == [1.0]


def test_a_retry_after_hint_still_raises_the_delay():
    class Busy(Exception):
        retry_after = 0.3

    assert delays_of(0.1, attempts=3, exc=Busy) == [0.3, 0.3]


def test_no_retry_sleeps_past_the_timeout():
    # 1 s waits within a 2.5 s budget: the core refuses the third retry (at
    # 3 s of sleep, past the deadline) as it would an exponential one.
    seawall.set_testing(False)
    clock = [0.0]
    retry = Retry(attempts=5, backoff=1.0, timeout=2.5, clock=lambda: clock[0])
    calls = []

    def fail():
        calls.append(1)
        raise ValueError("down")

    def sleep_by_clock(state):
        clock[0] += state.delay

    retry._before_sleep = sleep_by_clock
    seawall.set_testing(True)
    with pytest.raises(ValueError):
        retry(fail)()
    assert len(calls) == 3 and retry.stats()["deadline"] == 1


@pytest.mark.parametrize("bad", [-1, float("nan"), [], ["x"], True])
def test_bad_waits_are_config_errors(bad):
    with pytest.raises((seawall.SeawallConfigError, TypeError)):
        Retry(backoff=bad)


def test_a_function_returning_a_bad_wait_names_backoff():
    with pytest.raises(seawall.SeawallConfigError) as e:
        delays_of(lambda a, e: -1.0, exc=KeyError)
    assert e.value.field == "backoff"


def test_testing_mode_caps_attempts_and_is_reported():
    assert seawall.is_testing()
    seawall.set_testing(True, attempts=1)
    calls = []

    @Retry(attempts=5, backoff=10.0)
    def fail():
        calls.append(1)
        raise ValueError("down")

    with pytest.raises(ValueError):
        fail()
    assert len(calls) == 1
    seawall.set_testing(True, attempts=2)
    calls.clear()
    with pytest.raises(ValueError):
        fail()
    assert len(calls) == 2
    seawall.set_testing(False)
    assert not seawall.is_testing()
    with pytest.raises(seawall.SeawallConfigError):
        seawall.set_testing(True, attempts=0)


def test_testing_mode_does_not_sleep_in_async_code():
    seawall.set_testing(True)
    calls = []

    @Retry(attempts=3, backoff=3600.0)
    async def fail():
        calls.append(1)
        raise ValueError("down")

    async def main():
        with pytest.raises(ValueError):
            await asyncio.wait_for(fail(), timeout=5)

    asyncio.run(main())
    assert len(calls) == 3
