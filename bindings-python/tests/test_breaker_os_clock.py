"""CircuitBreaker on the OS clock (no ``clock=``): the decorator and ``with``
read the clock only when a decision or a duration needs it, and every decision,
transition and duration stays what the fake-clock tests of test_breaker.py
establish."""

import threading
import time

import pytest

from seawall import CircuitBreaker, CircuitOpenError, CountWindow


def failing_breaker(**kw):
    """A breaker opened by two failures of a count window of 2, with `open_duration`."""
    b = CircuitBreaker(window=CountWindow(2), minimum_calls=2, **kw)

    @b
    def down():
        raise ValueError("down")

    for _ in range(2):
        with pytest.raises(ValueError):
            down()
    return b


def test_an_open_breaker_rejects_with_the_time_left_through_the_decorator_and_with():
    b = failing_breaker(open_duration=30.0)
    decorated = b(lambda: "up")
    with pytest.raises(CircuitOpenError) as e:
        decorated()
    assert 29.0 < e.value.retry_after <= 30.0
    assert e.value.state == "open"
    with pytest.raises(CircuitOpenError) as e:
        with b:
            pass
    assert 29.0 < e.value.retry_after <= 30.0


def test_open_moves_to_half_open_on_time_and_a_probe_closes_it_with_every_transition_told():
    seen = []
    b = failing_breaker(open_duration=0.05)
    b.add_listener(lambda breaker, old, new: seen.append((old, new)))
    decorated = b(lambda: "up")
    with pytest.raises(CircuitOpenError):
        decorated()
    time.sleep(0.06)
    assert decorated() == "up"  # the probe
    assert b.state == "closed"
    assert seen == [("open", "half_open"), ("half_open", "closed")]


def test_a_call_listener_gets_each_call_duration():
    b = CircuitBreaker()
    durations = []
    b.on_success(lambda breaker, seconds: durations.append(seconds))

    @b
    def slow():
        time.sleep(0.02)

    slow()
    with b:
        time.sleep(0.02)
    assert len(durations) == 2
    assert all(0.02 <= d < 1.0 for d in durations), durations


def test_the_slow_call_rule_times_calls_without_a_listener():
    b = CircuitBreaker(window=CountWindow(2), minimum_calls=2, slow_call_duration=0.01,
                       slow_call_rate_threshold=100.0, failure_rate_threshold=None)

    @b
    def slow():
        time.sleep(0.02)

    slow()
    with b:
        time.sleep(0.02)
    assert b.state == "open"
    assert b.metrics()["totals"]["slow"] == 2


def test_a_transition_made_by_another_thread_between_calls_is_told_once():
    seen = []
    b = CircuitBreaker()
    b.add_listener(lambda breaker, old, new: seen.append((old, new)))
    decorated = b(lambda: "up")
    assert decorated() == "up"
    worker = threading.Thread(target=b.force_open)
    worker.start()
    worker.join()
    with pytest.raises(CircuitOpenError):
        decorated()
    b.reset()
    assert decorated() == "up"
    with b:
        pass
    assert seen == [("closed", "forced_open"), ("forced_open", "closed")]
