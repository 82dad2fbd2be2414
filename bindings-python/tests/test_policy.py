"""Fallbacks, the stale-if-error cache, composition in DESIGN §9 order, and the
deadline / timeout helpers."""

import asyncio
import threading
import time

import pytest

import seawall
from seawall import (Bulkhead, CircuitBreaker, CountWindow, Deadline, Policy, Retry, Backoff,
                     StaleCache, fallback, timeout, wrap)

FAST = Backoff(base=0.001, jitter="none")


def test_wrap_puts_layers_in_design_order_whatever_the_argument_order():
    r, b, bh, fb = Retry(), CircuitBreaker(), Bulkhead(1), fallback(0)
    p = wrap(r, 2.0, fb, b, bh)
    assert (p.fallback, p.bulkhead, p.breaker, p.retry) == (fb, bh, b, r)
    assert p.timeout.seconds == 2.0
    assert repr(p) == "<Policy fallback -> bulkhead -> breaker -> retry -> timeout>"
    with pytest.raises(TypeError):
        wrap(Retry(), Retry())
    with pytest.raises(TypeError):
        wrap("retry")


def test_a_retried_call_is_one_breaker_call_holding_one_permit():
    b = CircuitBreaker(window=CountWindow(10), minimum_calls=10)
    bh = Bulkhead(1)
    attempts = []

    @wrap(Retry(attempts=3, backoff=FAST), b, bh)
    def flaky():
        attempts.append(bh.active)
        raise OSError("down")

    with pytest.raises(OSError):
        flaky()
    assert attempts == [1, 1, 1]  # every attempt inside the one permit
    m = b.metrics()
    assert m["window"] == {"calls": 1, "failures": 1, "slow_calls": 0, "slow_failures": 0}
    assert bh.active == 0


def test_fallback_sources():
    calls = []

    def primary(x):
        calls.append(x)
        if x < 0:
            raise ValueError(x)
        return x

    def fb1(x):
        raise KeyError("no luck")

    p = Policy(fallback=[fb1, lambda x: -x, 99])
    assert p.execute(primary, 3) == seawall.PolicyResult(3, "primary", False, None)
    r = p.execute(primary, -4)
    assert (r.value, r.source, r.degraded, type(r.error)) == (4, "fallback-2", True, ValueError)


def test_stale_cache_serves_the_last_good_value():
    cache = StaleCache(maxsize=10)
    up = [True]

    def fetch(key):
        if not up[0]:
            raise ConnectionError("down")
        return f"fresh-{key}"

    p = Policy(fallback=fallback(cache, "default"))
    assert p.execute(fetch, "a").source == "primary"
    up[0] = False
    r = p.execute(fetch, "a")
    assert (r.value, r.source, r.degraded) == ("fresh-a", "stale-cache", True)
    r = p.execute(fetch, "b")  # never cached: next alternative
    assert (r.value, r.source) == ("default", "fallback-1")
    assert len(cache) == 1


def test_stale_cache_max_stale():
    cache = StaleCache(max_stale=0.05)
    state = {"up": True}

    def fetch():
        if not state["up"]:
            raise ConnectionError()
        return 1

    p = Policy(fallback=[cache])
    p.execute(fetch)
    state["up"] = False
    assert p.execute(fetch).source == "stale-cache"
    time.sleep(0.08)
    with pytest.raises(ConnectionError):
        p.execute(fetch)


def test_every_fallback_failing_raises_the_primary_error_unchanged():
    err = ValueError("primary")

    def primary():
        raise err

    def bad():
        raise KeyError()

    with pytest.raises(ValueError) as e:
        Policy(fallback=[bad])(primary)()
    assert e.value is err


def test_fallback_on_filters_and_cancellation_is_never_caught():
    p = Policy(fallback=fallback(0, on=KeyError))
    with pytest.raises(ValueError):
        p.execute(_raise(ValueError()))
    assert p.execute(_raise(KeyError())).value == 0
    with pytest.raises(KeyboardInterrupt):
        Policy(fallback=[0], ).execute(_raise(KeyboardInterrupt()))


def _raise(exc):
    def f():
        raise exc

    return f


def test_open_breaker_falls_back():
    b = CircuitBreaker(window=CountWindow(1), minimum_calls=1)

    @Policy(fallback=["cached"], breaker=b)
    def call():
        raise OSError()

    assert call() == "cached"  # the failure itself
    assert b.state == "open"
    r = Policy(fallback=["cached"], breaker=b).execute(lambda: "never")
    assert r.source == "fallback-1" and isinstance(r.error, seawall.CircuitOpenError)


def test_async_policy_timeout_then_retry_then_fallback():
    calls = []

    async def slow(x):
        calls.append(x)
        await asyncio.sleep(1.0)

    p = wrap(fallback(lambda x: f"fb-{x}"), Retry(attempts=2, backoff=FAST), 0.05)

    async def main():
        t0 = time.monotonic()
        r = await p.execute_async(slow, 7)
        return r, time.monotonic() - t0

    r, elapsed = asyncio.run(main())
    assert (r.value, r.source, type(r.error)) == ("fb-7", "fallback-1", seawall.DeadlineExceededError)
    assert calls == [7, 7] and elapsed < 0.5


def test_async_decorated_policy_returns_plain_values():
    bh = Bulkhead(2)

    @Policy(bulkhead=bh, breaker=CircuitBreaker(), retry=Retry(backoff=FAST))
    async def f(x):
        return x + 1

    async def main():
        return await asyncio.gather(*(f(i) for i in range(5)))

    assert asyncio.run(main()) == [1, 2, 3, 4, 5]


# -- deadlines and timeouts ----------------------------------------------------


def test_deadline_remaining_and_children_never_outlive_parents():
    clock = [10.0]
    d = Deadline(2.0, clock=lambda: clock[0])
    clock[0] = 11.5
    assert d.remaining() == pytest.approx(0.5)
    assert d.allocate(0.2) == pytest.approx(0.2)
    assert d.allocate(3.0) == pytest.approx(0.5)
    assert d.child(10.0).remaining() == pytest.approx(0.5)
    clock[0] = 12.0
    assert d.expired() and d.remaining() == 0.0


def test_nested_deadlines_are_current_and_capped():
    assert seawall.current_deadline() is None
    with Deadline(0.5) as outer:
        with Deadline(10.0) as inner:
            assert seawall.current_deadline() is inner
            assert inner.remaining() <= outer.remaining() + 1e-3
        assert seawall.current_deadline() is outer
    assert seawall.current_deadline() is None


def test_current_deadline_is_per_thread():
    seen = []
    with Deadline(1.0):
        t = threading.Thread(target=lambda: seen.append(seawall.current_deadline()))
        t.start()
        t.join()
    assert seen == [None]


def test_async_timeout_block_and_decorator():
    @timeout(0.05)
    async def slow():
        await asyncio.sleep(1.0)

    async def main():
        t0 = time.monotonic()
        with pytest.raises(seawall.DeadlineExceededError):
            await slow()
        with pytest.raises(TimeoutError):
            async with timeout(0.05):
                await asyncio.sleep(1.0)
        async with timeout(1.0) as d:
            assert 0.9 < d.remaining() <= 1.0
        return time.monotonic() - t0

    assert asyncio.run(main()) < 0.5


def test_timeout_does_not_mistake_the_callers_cancel():
    async def main():
        async def inner():
            async with timeout(5.0):
                await asyncio.sleep(1.0)

        task = asyncio.ensure_future(inner())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_sync_timeout_sets_the_current_deadline():
    @timeout(0.5)
    def f():
        return seawall.current_deadline().remaining()

    assert 0.4 < f() <= 0.5
