"""Retry's hooks (``on_retry``, ``on_give_up``) and the ``seawall`` logger:
breaker transitions at WARNING, retries at INFO, nothing printed unless the
application configures logging."""

import logging
import subprocess
import sys

import pytest

import seawall
from seawall import CircuitBreaker, CountWindow, Retry
from conftest import FakeClock


@pytest.fixture(autouse=True)
def no_sleeping():
    seawall.set_testing(True)
    yield
    seawall.set_testing(False)


def failing(calls):
    def fail():
        calls.append(1)
        raise ConnectionError(f"down {len(calls)}")

    return fail


def test_on_retry_and_on_give_up_see_each_attempt_and_the_reason():
    retry = Retry(attempts=3, backoff=[0.1, 0.2], name="quotes")
    retried, gave_up = [], []
    retry.on_retry(lambda s: retried.append((s.attempt, str(s.exception), s.delay, s.reason)))

    @retry.on_give_up
    def record(s):
        gave_up.append((s.attempt, str(s.exception), s.reason))

    calls = []
    with pytest.raises(ConnectionError):
        retry(failing(calls))()
    assert retried == [(1, "down 1", 0.1, None), (2, "down 2", 0.2, None)]
    assert gave_up == [(3, "down 3", "max_attempts")]


def test_not_retryable_is_a_give_up_with_its_reason():
    retry = Retry(attempts=3, retry_on=KeyError)
    reasons = []
    retry.on_give_up(lambda s: reasons.append(s.reason))
    with pytest.raises(ConnectionError):
        retry(failing([]))()
    assert reasons == ["not_retryable"]


def test_a_raising_retry_listener_changes_nothing(caplog):
    retry = Retry(attempts=3, backoff=0)
    retry.on_retry(lambda s: 1 / 0)
    retry.on_give_up(lambda s: 1 / 0)
    calls = []
    with caplog.at_level(logging.ERROR, logger="seawall"):
        with pytest.raises(ConnectionError, match="down 3"):  # the call's own error
            retry(failing(calls))()
    assert len(calls) == 3
    assert caplog.text.count("ZeroDivisionError") == 3


def test_a_removed_listener_is_not_called():
    retry = Retry(attempts=2, backoff=0)
    seen = []
    listener = retry.on_retry(seen.append)
    retry.remove_listener(listener)
    with pytest.raises(ConnectionError):
        retry(failing([]))()
    assert seen == []


def test_the_seawall_logger_reports_retries_at_info_and_transitions_at_warning(caplog):
    b = CircuitBreaker(window=CountWindow(1), minimum_calls=1, name="payments", clock=FakeClock())
    retry = Retry(attempts=2, backoff=0.5, name="charge")
    with caplog.at_level(logging.INFO, logger="seawall"):
        with pytest.raises(ConnectionError):
            retry(failing([]))()
        with pytest.raises(ConnectionError):
            b.call(failing([]))
    records = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "seawall"]
    assert records == [
        ("INFO", "seawall: retry charge: attempt 1 failed with ConnectionError('down 1'); retrying in 0.500 s"),
        ("WARNING", "seawall: circuit breaker payments: closed -> open"),
    ]


def test_nothing_is_printed_without_logging_configured():
    code = (
        "import seawall\n"
        "b = seawall.CircuitBreaker(window=seawall.CountWindow(1), minimum_calls=1,"
        " listeners=[lambda *a: 1 / 0])\n"
        "try:\n    b.call(lambda: 1 / 0)\nexcept ZeroDivisionError:\n    pass\n"
        "assert b.state == 'open'\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert (r.stdout, r.stderr) == ("", "")


def test_breaker_call_listeners_hear_every_form():
    clock = FakeClock()
    b = CircuitBreaker(window=CountWindow(4), minimum_calls=4, clock=clock, failure_on_result=lambda v: v == 503)
    heard = []
    b.on_success(lambda br, d: heard.append(("success", d)))
    b.on_failure(lambda br, d: heard.append(("failure", d)))

    @b.on_rejected
    def rejected(br, d):
        assert br is b
        heard.append(("rejected", d))

    def slow_ok():
        clock.advance(0.25)
        return 200

    assert b(slow_ok)() == 200  # decorator: a success of 0.25 s
    with b:
        clock.advance(0.5)  # with: a success of 0.5 s
    assert b.call(lambda: 503) == 503  # a rejected value: a failure
    with pytest.raises(ConnectionError):
        b.call(failing([]))  # 2 failures of 4: 50 %, open
    with pytest.raises(seawall.CircuitOpenError):
        b.call(slow_ok)
    assert heard == [("success", 0.25), ("success", 0.5), ("failure", 0.0), ("failure", 0.0), ("rejected", 0.0)]


def test_a_raising_call_listener_changes_nothing_and_can_be_removed(caplog):
    b = CircuitBreaker()
    bad = b.on_success(lambda br, d: 1 / 0)
    with caplog.at_level(logging.ERROR, logger="seawall"):
        assert b.call(lambda: "value") == "value"
    assert "ZeroDivisionError" in caplog.text
    b.remove_listener(bad)
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="seawall"):
        assert b.call(lambda: "value") == "value"
    assert caplog.text == ""
    assert b.metrics()["totals"]["successes"] == 2


def test_an_interrupt_in_a_call_listener_reaches_the_caller_after_recording():
    b = CircuitBreaker()

    def stop(br, d):
        raise KeyboardInterrupt

    b.on_success(stop)
    with pytest.raises(KeyboardInterrupt):
        b.call(lambda: "value")
    assert b.metrics()["totals"]["successes"] == 1
