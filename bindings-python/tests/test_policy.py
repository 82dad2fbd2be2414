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


# -- one Timeout / Deadline object entered many times -----------------------------


def test_one_timeout_object_times_out_each_concurrent_task_on_its_own():
    T = timeout(0.2)

    async def call(delay):
        try:
            async with T:
                await asyncio.sleep(delay)
            return "ok"
        except seawall.DeadlineExceededError:
            return "timed out"

    async def main():
        t0 = time.monotonic()
        got = await asyncio.gather(call(0.01), call(2.0), call(0.01))
        return got, time.monotonic() - t0

    got, took = asyncio.run(main())
    # The 2 s task is cut at 0.2 s; the quick ones finish untouched.
    assert got == ["ok", "timed out", "ok"]
    assert took < 1.0
    assert seawall.current_deadline() is None


def test_one_decorated_async_function_times_out_each_concurrent_call():
    @timeout(0.2)
    async def f(delay):
        await asyncio.sleep(delay)
        return delay

    async def main():
        return await asyncio.gather(f(0.01), f(2.0), f(0.02), return_exceptions=True)

    a, b, c = asyncio.run(main())
    assert (a, c) == (0.01, 0.02) and isinstance(b, seawall.DeadlineExceededError)


def test_nested_use_of_one_timeout_object_leaves_no_deadline_behind():
    clock = [50.0]
    T = timeout(0.5, clock=lambda: clock[0])
    with T as outer:
        clock[0] = 50.1
        with T as inner:
            # inner: 0.5 s from 50.1 (ends 50.6) capped by outer (ends 50.5).
            assert seawall.current_deadline() is inner
            assert inner.remaining() == pytest.approx(0.4)
        assert seawall.current_deadline() is outer
        assert outer.remaining() == pytest.approx(0.4)
    assert seawall.current_deadline() is None
    # Later retries in this thread obey no stale deadline: 3 attempts, 2 failures.
    clock[0] = 60.0
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("transient")
        return "ok"

    assert Retry(attempts=5, backoff=FAST)(flaky)() == "ok" and len(calls) == 3


def test_one_timeout_object_entered_by_many_threads_at_once():
    T = timeout(5.0)
    barrier = threading.Barrier(4)
    seen, errors = [], []

    def worker():
        try:
            with T as d:
                barrier.wait()  # all four inside before any leaves
                seen.append((seawall.current_deadline() is d, 0.0 < d.remaining() <= 5.0))
                barrier.wait()
            seen.append(seawall.current_deadline())
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(seen, key=repr) == sorted([(True, True)] * 4 + [None] * 4, key=repr)


def test_one_deadline_object_entered_by_concurrent_tasks():
    d = Deadline(5.0)

    async def task(inside, leave):
        with d as e:
            inside.set()
            await leave.wait()
            now = seawall.current_deadline()
        return e is d and now is d, seawall.current_deadline()

    async def main():
        a_in, b_in, leave = asyncio.Event(), asyncio.Event(), asyncio.Event()
        a = asyncio.ensure_future(task(a_in, leave))
        b = asyncio.ensure_future(task(b_in, leave))
        await a_in.wait()
        await b_in.wait()
        leave.set()
        return await asyncio.gather(a, b)

    assert asyncio.run(main()) == [(True, None), (True, None)]


def test_entering_a_deadline_under_a_sooner_one_never_changes_the_object():
    clock = [100.0]
    now = lambda: clock[0]  # noqa: E731
    outer, x = Deadline(0.5, clock=now), Deadline(10.0, clock=now)
    with outer:
        with x as in_force:
            # x ends at 110.0, outer at 100.5: the deadline in force is outer's.
            assert seawall.current_deadline() is in_force
            assert in_force.remaining() == pytest.approx(0.5)
    # x itself still has its own 10 s, for whoever enters it next.
    assert x.remaining() == pytest.approx(10.0)
    with x as alone:
        assert alone is x and x.remaining() == pytest.approx(10.0)


def test_exiting_a_timeout_never_entered_here_is_a_clear_error():
    with pytest.raises(RuntimeError, match="not entered"):
        timeout(1.0).__exit__(None, None, None)


def test_sync_timeout_sets_the_current_deadline():
    @timeout(0.5)
    def f():
        return seawall.current_deadline().remaining()

    assert 0.4 < f() <= 0.5


def test_timeout_refuses_generators_it_could_not_bound():
    async def agen():
        yield 1

    def gen():
        yield 1

    for fn in (agen, gen):
        with pytest.raises(TypeError, match="cannot bound a generator"):
            seawall.timeout(0.01)(fn)


def test_a_policy_awaits_an_object_with_an_async_call_inside_its_layers():
    # A breaker that opens at 50 % of 2 calls: one success then one failure opens
    # it only if each outcome is recorded when the coroutine ends (a sync wrapper
    # would record two successes when the coroutines are made).
    breaker = CircuitBreaker(window=CountWindow(4), minimum_calls=2, failure_rate_threshold=50)

    class Client:
        async def __call__(self, ok):
            await asyncio.sleep(0)
            if not ok:
                raise ConnectionError("down")
            return "up"

    call = Policy(breaker=breaker)(Client())

    async def main():
        assert await call(True) == "up"
        with pytest.raises(ConnectionError):
            await call(False)

    asyncio.run(main())
    assert breaker.state == "open"
