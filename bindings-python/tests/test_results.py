"""Returned values that are failures (DESIGN §1): ``Retry(retry_on_result=)``
retries them and hands back the last one when attempts run out;
``CircuitBreaker(failure_on_result=)`` records them as failures and still
returns them; both through ``wrap``."""

import asyncio

import pytest

import seawall
from seawall import Backoff, CircuitBreaker, CountWindow, Retry, RetryState
from conftest import FakeClock

NO_WAIT = Backoff(base=0.001, max=0.001, jitter="none")


class Response:
    def __init__(self, status):
        self.status = status

    def __repr__(self):
        return f"<Response {self.status}>"


def is_unavailable(r):
    return r.status == 503


def responder(*statuses):
    """A callable returning the given statuses in turn, counting its calls."""
    seen = list(statuses)
    calls = []

    def call():
        calls.append(1)
        return Response(seen[len(calls) - 1])

    call.calls = calls
    return call


def test_a_rejected_result_is_retried_until_a_good_one():
    fetch = responder(503, 503, 200)
    retry = Retry(attempts=5, backoff=NO_WAIT, retry_on_result=is_unavailable)
    assert retry(fetch)().status == 200
    assert len(fetch.calls) == 3
    assert retry.stats()["allowed"] == 2


def test_when_attempts_run_out_the_last_value_is_returned_not_raised():
    fetch = responder(503, 503, 503)
    states = []
    retry = Retry(attempts=3, backoff=NO_WAIT, retry_on_result=is_unavailable, before_sleep=states.append)
    r = retry.call(fetch)
    assert r.status == 503 and r is not None
    assert len(fetch.calls) == 3
    assert retry.stats()["max_attempts"] == 1
    # before_sleep saw each rejected value: attempts 1 and 2 (3 was the last).
    assert [(s.attempt, s.result.status) for s in states] == [(1, 503), (2, 503)]
    assert all(isinstance(s, RetryState) and isinstance(s.exception, seawall.ResultRejected) for s in states)


def test_exceptions_keep_their_own_rule_next_to_results():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("reset")
        if len(calls) == 2:
            return Response(503)
        return Response(200)

    retry = Retry(attempts=4, backoff=NO_WAIT, retry_on=ConnectionError, retry_on_result=is_unavailable)
    assert retry(flaky)().status == 200 and len(calls) == 3
    with pytest.raises(KeyError):  # not in retry_on: raised at once
        Retry(attempts=4, backoff=NO_WAIT, retry_on=ConnectionError, retry_on_result=is_unavailable)(
            lambda: {}["x"]
        )()


def test_async_retry_on_result():
    calls = []

    async def fetch():
        calls.append(1)
        return Response(503 if len(calls) < 3 else 200)

    retry = Retry(attempts=2, backoff=NO_WAIT, retry_on_result=is_unavailable)
    r = asyncio.run(retry(fetch)())
    assert (r.status, len(calls)) == (503, 2)  # ran out: the last value
    calls.clear()
    r = asyncio.run(Retry(attempts=3, backoff=NO_WAIT, retry_on_result=is_unavailable)(fetch)())
    assert (r.status, len(calls)) == (200, 3)


def test_a_breaker_records_a_rejected_result_as_a_failure_and_returns_it():
    b = CircuitBreaker(window=CountWindow(4), minimum_calls=4, failure_on_result=is_unavailable, clock=FakeClock())
    fetch = b(responder(200, 503, 503, 503))
    assert [fetch().status for _ in range(4)] == [200, 503, 503, 503]
    t = b.metrics()["totals"]
    assert (t["successes"], t["failures"]) == (1, 3)
    assert b.state == "open"  # 75 % failures >= 50 %
    with pytest.raises(seawall.CircuitOpenError):
        fetch()


def test_async_and_call_forms_of_the_breaker_check_results_too():
    b = CircuitBreaker(failure_on_result=is_unavailable)

    async def fetch():
        return Response(503)

    assert asyncio.run(b(fetch)()).status == 503
    assert asyncio.run(b.call(fetch)).status == 503
    assert b.call(lambda: Response(503)).status == 503
    assert b.call(lambda: Response(200)).status == 200
    t = b.metrics()["totals"]
    assert (t["successes"], t["failures"]) == (1, 3)


def test_a_predicate_that_raises_is_the_calls_exception():
    b = CircuitBreaker(failure_on_result=lambda r: r.status == 503)
    with pytest.raises(AttributeError):
        b.call(lambda: "no status")
    assert b.metrics()["totals"]["failures"] == 1


def test_wrap_retries_results_inside_one_breaker_call():
    b = CircuitBreaker(failure_on_result=is_unavailable)
    fetch = responder(503, 503, 503)
    policy = seawall.wrap(b, Retry(attempts=3, backoff=NO_WAIT, retry_on_result=is_unavailable))
    r = policy.execute(fetch)
    assert (r.value.status, r.source, len(fetch.calls)) == (503, "primary", 3)
    t = b.metrics()["totals"]
    # One breaker call (holding one permit across the attempts), a failure.
    assert (t["admitted"], t["failures"]) == (1, 1)


def test_predicates_must_be_callable():
    with pytest.raises(seawall.SeawallConfigError) as e:
        Retry(retry_on_result=503)
    assert e.value.field == "retry_on_result"
    with pytest.raises(seawall.SeawallConfigError) as e:
        CircuitBreaker(failure_on_result=503)
    assert e.value.field == "failure_on_result"
