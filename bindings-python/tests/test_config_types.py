"""A setting of the wrong type (a string, a float or a bool where a whole
number belongs, a number where a function belongs) is a SeawallConfigError
naming the keyword argument, as a bad value is (Node: EINVALIDCONFIG with
`field`), never a bare TypeError naming nothing."""

import datetime

import pytest

import seawall
import seawall.asgi
import seawall.wsgi
from seawall import Bulkhead, CircuitBreaker, CountWindow, Retry

OPEN = {"version": 1, "state": "open", "openings": 1, "retry_after": 5.0}

# (what is built, the field the error must name): the field is the keyword
# argument the user wrote, so each expectation is read off the call itself.
CASES = [
    (lambda: seawall.chaos("types-seed-float", seed=1.5), "seed"),
    (lambda: seawall.chaos("types-seed-str", seed="abc"), "seed"),
    (lambda: seawall.chaos("types-seed-bool", seed=True), "seed"),
    (lambda: seawall.Chaos("types-reseed").reseed("x"), "seed"),
    (lambda: CircuitBreaker(initial_state={**OPEN, "openings": "x"}), "initial_state.openings"),
    (lambda: CircuitBreaker(initial_state={**OPEN, "openings": 1.0}), "initial_state.openings"),
    (lambda: CircuitBreaker(initial_state={**OPEN, "openings": True}), "initial_state.openings"),
    (lambda: CircuitBreaker(initial_state={**OPEN, "retry_after": "5"}), "initial_state.retry_after"),
    (lambda: CircuitBreaker(permit_slots=256.0), "permit_slots"),
    (lambda: CircuitBreaker(permit_slots="256"), "permit_slots"),
    (lambda: CircuitBreaker(permit_slots=True), "permit_slots"),
    (lambda: CircuitBreaker(minimum_calls="10"), "minimum_calls"),
    (lambda: CircuitBreaker(minimum_calls=10.0), "minimum_calls"),
    (lambda: CircuitBreaker(consecutive_failures=3.0), "consecutive_failures"),
    (lambda: CircuitBreaker(half_open_max_calls=1.0), "half_open_max_calls"),
    (lambda: CircuitBreaker(failure_rate_threshold="50"), "failure_rate_threshold"),
    (lambda: CircuitBreaker(open_duration="30"), "open_duration"),
    (lambda: CircuitBreaker(jitter_seed=1.5), "jitter_seed"),
    (lambda: CircuitBreaker(window=100), "window"),
    (lambda: CircuitBreaker(window=CountWindow(10.0)), "window.size"),  # type: ignore[arg-type]
    # A time window's duration the user wrote, not the bucket width made of it.
    (lambda: CircuitBreaker(window=seawall.TimeWindow(-1.0)), "window.duration"),
    (lambda: CircuitBreaker(window=seawall.TimeWindow(float("nan"))), "window.duration"),
    (lambda: CircuitBreaker(window=seawall.TimeWindow(float("inf"))), "window.duration"),
    (lambda: CircuitBreaker(window=seawall.TimeWindow(datetime.timedelta(seconds=-1))), "window.duration"),
    (lambda: CircuitBreaker(record_on="ValueError"), "record_on"),
    (lambda: CircuitBreaker(ignore_on=[ValueError, 5]), "ignore_on"),
    (lambda: CircuitBreaker(name=5), "name"),
    (lambda: CircuitBreaker(shared=5), "shared"),
    (lambda: CircuitBreaker(clock=5), "clock"),
    (lambda: CircuitBreaker(failure_on_result=503), "failure_on_result"),
    (lambda: CircuitBreaker(listeners=5), "listeners"),
    (lambda: CircuitBreaker(listeners=[5]), "listeners"),
    (lambda: Bulkhead("4"), "max_concurrent"),
    (lambda: Bulkhead(4.0), "max_concurrent"),
    (lambda: Bulkhead(4, 1.0), "max_queue"),
    (lambda: Bulkhead(4, queue_timeout="1"), "queue_timeout"),
    (lambda: Bulkhead(4, shares=5), "shares"),
    (lambda: Bulkhead(4, priority=5), "priority"),
    (lambda: Bulkhead(4, name=5), "name"),
    (lambda: Retry(attempts="3"), "attempts"),
    (lambda: Retry(attempts=3.0), "attempts"),
    (lambda: Retry(seed=1.5), "seed"),
    (lambda: Retry(timeout="1"), "timeout"),
    (lambda: Retry(backoff="fast"), "backoff"),
    (lambda: Retry(backoff=[0.1, "x"]), "backoff"),
    (lambda: Retry(retry_on="ValueError"), "retry_on"),
    (lambda: Retry(retry_on_result=503), "retry_on_result"),
    (lambda: Retry(retry_after=5), "retry_after"),
    (lambda: Retry(before_sleep=5), "before_sleep"),
    (lambda: Retry(clock=5), "clock"),
    (lambda: Retry(budget=5), "budget"),
    (lambda: Retry(throttle=5), "throttle"),
    (lambda: seawall.Backoff(base="0.1"), "base"),
    (lambda: seawall.Backoff(jitter=5), "jitter"),
    (lambda: seawall.RetryBudget(ttl="10"), "ttl"),
    (lambda: seawall.RetryBudget(min_retries_per_sec=1.5), "min_retries_per_sec"),
    (lambda: seawall.RetryBudget(name=5), "name"),
    (lambda: seawall.RetryBudget(clock=5), "clock"),
    (lambda: seawall.RetryThrottle(max_tokens="10"), "max_tokens"),
    (lambda: seawall.RetryThrottle(shared=5), "shared"),
    (lambda: seawall.Health(buckets=10.0), "buckets"),
    (lambda: seawall.Health(clock=5), "clock"),
    (lambda: seawall.RateLimiter("10"), "rate"),
    (lambda: seawall.RateLimiter(10, burst=1.5), "burst"),
    (lambda: seawall.RateLimiter(10, per="1"), "per"),
    (lambda: seawall.RateLimiter(10, max_wait="1"), "max_wait"),
    (lambda: seawall.RateLimiter(10, keyed=1), "keyed"),
    (lambda: seawall.RateLimiter(10, wait=0), "wait"),
    (lambda: seawall.RateLimiter(10, name=5), "name"),
    (lambda: seawall.RateLimiter(10, clock=5), "clock"),
    (lambda: seawall.RateLimiter(10, sleep=5), "sleep"),
    (lambda: seawall.Deadline("1"), "total"),
    (lambda: seawall.Deadline(1.0, clock=5), "clock"),
    (lambda: seawall.Timeout("1"), "timeout"),
    (lambda: seawall.Timeout(1.0, clock=5), "clock"),
    (lambda: seawall.StaleCache(key=5), "key"),
    (lambda: seawall.StaleCache(max_stale="1"), "max_stale"),
    (lambda: seawall.fallback(1, on="x"), "on"),
    (lambda: seawall.Policy(chaos=Retry()), "chaos"),
    (lambda: seawall.Policy(breaker=Retry()), "breaker"),
    (lambda: seawall.Policy(fallback=5), "fallback"),
    (lambda: seawall.Policy(timeout="1"), "timeout"),
    (lambda: seawall.Policy(name=5), "name"),
    (lambda: seawall.chaos("types-latency", latency=datetime.time(1)), "latency"),
    (lambda: seawall.chaos.load(5, poll_interval=None), "path"),
    (lambda: seawall.chaos.load("rules.json", poll_interval="1"), "poll_interval"),
    (lambda: seawall.chaos.load("rules.json", poll_interval=None, on_error=5), "on_error"),
    (lambda: seawall.asgi.SeawallMiddleware(None, bulkhead=5), "bulkhead"),
    (lambda: seawall.asgi.SeawallMiddleware(None, get_priority="high"), "get_priority"),
    (lambda: seawall.asgi.SeawallMiddleware(None, health={"db": 5}), "health"),
    (lambda: seawall.asgi.SeawallMiddleware(None, health=5), "health"),
    (lambda: seawall.asgi.SeawallMiddleware(None, health_path=5), "health_path"),
    (lambda: seawall.wsgi.SeawallMiddleware(None, deadline_header=5), "deadline_header"),
    (lambda: seawall.wsgi.SeawallMiddleware(None, retry_after="1"), "retry_after"),
]


@pytest.mark.parametrize("make, field", CASES, ids=[f"{i}-{f}" for i, (_, f) in enumerate(CASES)])
def test_a_wrong_type_is_a_config_error_naming_the_field(make, field):
    with pytest.raises(seawall.SeawallConfigError) as e:
        make()
    assert e.value.field == field
    assert str(e.value).startswith(f"invalid {field}")
