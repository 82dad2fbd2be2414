"""Typed use of the public API; `mypy --strict` must accept it (test_typing.py)."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Optional, Tuple

import seawall
from seawall import (
    Backoff,
    Bulkhead,
    BulkheadPermit,
    CircuitBreaker,
    CircuitOpenError,
    CountWindow,
    Deadline,
    Policy,
    PolicyResult,
    Retry,
    RetryBudget,
    RetryState,
    RetryThrottle,
    StaleCache,
    State,
    TimeWindow,
    fallback,
    timeout,
    wrap,
)

breaker = CircuitBreaker(
    failure_rate_threshold=50.0,
    minimum_calls=20,
    window=TimeWindow(10.0, buckets=10),
    slow_call_duration=2.0,
    open_duration=30.0,
    half_open_max_calls=2,
    record_on=(OSError, TimeoutError),
    ignore_on=lambda e: isinstance(e, KeyError),
    name="payments",
)
count_breaker = CircuitBreaker(window=CountWindow(100), consecutive_failures=5)


def on_change(b: CircuitBreaker, old: State, new: State) -> None:
    print(b.name, old.value, new.value)


breaker.add_listener(on_change)


@breaker
def charge(amount: int) -> str:
    return f"charged {amount}"


@breaker
async def charge_async(amount: int) -> str:
    await asyncio.sleep(0)
    return f"charged {amount}"


def use_breaker() -> Optional[float]:
    s: str = charge(5)
    with breaker:
        pass
    permit = breaker.acquire()
    permit.success()
    m: Dict[str, Any] = breaker.metrics()
    state: State = breaker.state
    try:
        charge(1)
    except CircuitOpenError as e:
        return e.retry_after
    print(s, m, state)
    return None


def log_sleep(s: RetryState) -> None:
    print(s.attempt, s.delay, s.exception)


retry = Retry(
    attempts=4,
    backoff=Backoff(base=0.05, multiplier=2.0, max=1.0, jitter="decorrelated"),
    retry_on=OSError,
    budget=RetryBudget(ttl=10.0, min_retries_per_sec=10, percent_can_retry=20.0),
    timeout=5.0,
    before_sleep=log_sleep,
)


@retry
def fetch(url: str) -> bytes:
    return url.encode()


def use_retry() -> List[bytes]:
    out = [fetch("a")]
    for attempt in retry:
        with attempt:
            out.append(fetch("b"))
    return out


bulkhead = Bulkhead(10, 20, queue_timeout=1.0, shares={"low": 20})


@bulkhead(priority="high")
def work(x: int) -> int:
    return x * 2


async def use_async() -> int:
    permit: BulkheadPermit = await bulkhead.acquire_async("normal")
    permit.release()
    async with bulkhead:
        pass
    async with timeout(1.0) as d:
        left: float = d.remaining()
    async for attempt in retry:
        with attempt:
            await charge_async(int(left))
    return len(await charge_async(1))


policy: Policy = wrap(fallback(StaleCache(maxsize=100), "default"), bulkhead, breaker, retry, 2.0)


def use_policy() -> str:
    r: PolicyResult[str] = policy.execute(charge, 3)
    if r.degraded:
        print(r.source, r.error)
    with Deadline(1.0) as d:
        d.allocate(0.5)
    return r.value


def use_shared(name: str) -> Tuple[int, int]:
    pool = Bulkhead(4, 8, shared=name)
    throttle = RetryThrottle(max_tokens=10.0, token_ratio=0.1, shared=name)
    budget = RetryBudget(percent_can_retry=20.0, shared=name)
    assert pool.shared and throttle.shared and budget.created in (True, False)
    permits, tickets = pool.reclaim_abandoned()
    Bulkhead.unlink_shared(name)
    RetryThrottle.unlink_shared(name)
    RetryBudget.unlink_shared(name)
    return permits + tickets, int(throttle.tokens)


def use_policy_decorator() -> str:
    guarded = Policy(breaker=breaker, retry=retry)(charge)
    return guarded(7)


if __name__ == "__main__":
    print(use_breaker(), use_retry(), work(2), use_policy(), seawall.__version__)


def every_duration_takes_a_timedelta() -> None:
    # Each duration keyword is `seawall.Seconds`: a number or a timedelta.
    from datetime import timedelta

    two = timedelta(seconds=2)
    span: seawall.Seconds = two
    CircuitBreaker(
        window=TimeWindow(duration=timedelta(seconds=10)),
        slow_call_duration=two,
        open_duration=timedelta(minutes=1),
        max_open_duration=None,
        half_open_max_wait=span,
    )
    pool = Bulkhead(2, queue_timeout=two)
    pool.acquire(timeout=timedelta(milliseconds=5)).release()
    Retry(timeout=two, backoff=[0.1, two], retry_after=lambda e: two)
    Retry(backoff=seawall.linear_backoff(two, 0.5, max=timedelta(seconds=5)))
    Backoff(base=timedelta(milliseconds=100), max=two)
    with Deadline(two) as d:
        d.allocate(timedelta(milliseconds=500))
        d.child(two)
    timeout(two)
    Policy(timeout=two)
    StaleCache(max_stale=timedelta(minutes=5))
    seawall.RateLimiter(10, per=two, max_wait=two).acquire(timeout=two)


def policy_hooks(pool: Bulkhead, t: seawall.Timeout, fb: seawall.Fallback) -> None:
    @pool.on_rejected
    def refused(bulkhead: Bulkhead, error: BaseException) -> None: ...

    @t.on_timeout
    def timed_out(timeout: seawall.Timeout, seconds: float) -> None: ...

    @fb.on_fallback
    def answered(fallback: seawall.Fallback, result: PolicyResult[Any]) -> None: ...

    pool.remove_listener(refused)
    t.remove_listener(timed_out)
    fb.remove_listener(answered)


def state_export(b: CircuitBreaker) -> CircuitBreaker:
    saved: Dict[str, Any] = b.export_state()
    return CircuitBreaker(initial_state=saved)


# -- chaos and middleware --
from seawall.asgi import SeawallMiddleware as AsgiMiddleware  # noqa: E402
from seawall.wsgi import SeawallMiddleware as WsgiMiddleware  # noqa: E402

inventory: seawall.Chaos = seawall.chaos("inventory", enabled=True, latency=0.1, failure_rate=0.5, seed=7)
inventory_rules: seawall.ChaosRules = inventory.update(probability=0.5)
shared_inventory: seawall.Chaos = seawall.chaos.for_dependency("inventory")


@inventory
def lookup(sku: str) -> int:
    return len(sku)


@shared_inventory
async def lookup_async(sku: str) -> int:
    return len(sku)


looked_up: int = lookup("A1")
chaos_counts: Dict[str, Any] = inventory.metrics()
chaos_policy: Policy = wrap(breaker, inventory, 0.5)
try:
    lookup("A1")
except seawall.ChaosError as chaos_error:
    chaos_name: Optional[str] = chaos_error.name


async def asgi_app(scope: Any, receive: Any, send: Any) -> None:
    return None


def wsgi_app(environ: Dict[str, Any], start_response: Any) -> List[bytes]:
    return [b""]


asgi = AsgiMiddleware(asgi_app, bulkhead=Bulkhead(8, shares={"low": 20}),
                      get_priority=seawall.priority_by_path({"/payments": "high"}),
                      health={"inventory": [breaker, seawall.Health()]})
wsgi = WsgiMiddleware(wsgi_app, health=seawall.HealthReport({"inventory": breaker}), retry_after=2)
