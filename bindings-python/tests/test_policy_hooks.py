"""Hooks of the bulkhead (``on_rejected``), the timeout (``on_timeout``) and the
fallback (``on_fallback``): Node's ``reject``, ``timeout`` and ``fallback``
events, registered as the breaker's and the retry's are. A listener that
raises changes nothing (DESIGN §1)."""

import asyncio
import logging
import re
import threading

import pytest

import seawall
from seawall import Bulkhead, BulkheadFullError, DeadlineExceededError, Policy, StaleCache
from conftest import FakeClock


# -- bulkhead ----------------------------------------------------------------


def test_bulkhead_rejections_are_heard_with_their_reason_in_every_form():
    pool = Bulkhead(1, max_queue=0)
    heard = []

    @pool.on_rejected
    def listener(bulkhead, error):
        heard.append((bulkhead, error.reason, error.active, error.queued))

    assert listener is not None
    held = pool.acquire()

    @pool
    def decorated():
        return 1

    with pytest.raises(BulkheadFullError):
        decorated()
    with pytest.raises(BulkheadFullError):
        pool.try_acquire()
    with pytest.raises(BulkheadFullError):
        with pool:
            pass
    with pytest.raises(BulkheadFullError):
        pool.enqueue()

    async def main():
        with pytest.raises(BulkheadFullError):
            await pool.acquire_async()

    asyncio.run(main())
    # Five refusals, each with one permit held and nobody queued.
    assert heard == [(pool, "full", 1, 0)] * 5
    held.release()
    assert decorated() == 1
    assert len(heard) == 5


def test_bulkhead_shed_and_timeout_reasons():
    pool = Bulkhead(2, max_queue=1, shares={"low": 50})
    reasons = []
    pool.on_rejected(lambda _b, e: reasons.append(e.reason))
    low = pool.acquire("low")  # low's limit: max(1, floor(2 * 50 / 100)) = 1
    with pytest.raises(BulkheadFullError):
        pool.acquire("low")
    other = pool.acquire("critical")
    # Both permits held; the one queue place waits 10 ms and times out.
    with pytest.raises(BulkheadFullError):
        pool.acquire("critical", timeout=0.01)

    async def main():
        with pytest.raises(BulkheadFullError):
            await pool.acquire_async("critical", timeout=0.01)

    asyncio.run(main())
    assert reasons == ["shed", "timeout", "timeout"]
    assert pool.metrics()["rejected_timeout"] == 2
    low.release()
    other.release()


def test_a_raising_bulkhead_listener_is_logged_and_changes_nothing(caplog):
    pool = Bulkhead(1)
    heard = []

    def broken(_b, _e):
        raise RuntimeError("listener bug")

    pool.on_rejected(broken)
    pool.on_rejected(lambda _b, e: heard.append(e.reason))
    held = pool.acquire()
    with caplog.at_level(logging.ERROR, logger="seawall"):
        with pytest.raises(BulkheadFullError):
            pool.try_acquire()
    assert heard == ["full"]
    assert "bulkhead rejected listener" in caplog.text and "listener bug" in caplog.text
    held.release()
    pool.remove_listener(broken)
    pool.remove_listener(pool._on_rejected[0])
    assert pool._on_rejected == ()
    h2 = pool.acquire()
    with pytest.raises(BulkheadFullError):
        pool.try_acquire()
    assert heard == ["full"]
    h2.release()


def test_a_keyboard_interrupt_from_a_bulkhead_listener_reaches_the_caller_and_nothing_is_held():
    pool = Bulkhead(1)
    held = pool.acquire()

    def interrupt(_b, _e):
        raise KeyboardInterrupt

    pool.on_rejected(interrupt)
    with pytest.raises(KeyboardInterrupt):
        pool.try_acquire()
    assert pool.active == 1
    held.release()
    assert pool.active == 0


def test_bulkhead_listener_must_be_callable():
    with pytest.raises(TypeError):
        Bulkhead(1).on_rejected(42)


# -- timeout -----------------------------------------------------------------


def test_an_async_timeout_is_heard_before_deadline_exceeded_is_raised():
    t = seawall.timeout(0.01)
    heard = []
    t.on_timeout(lambda timeout, seconds: heard.append((timeout, seconds)))

    @t
    async def slow():
        await asyncio.sleep(5)

    @t
    async def quick():
        return "ok"

    async def main():
        assert await quick() == "ok"
        with pytest.raises(DeadlineExceededError):
            await slow()
        with pytest.raises(DeadlineExceededError):
            async with t:
                await asyncio.sleep(5)

    asyncio.run(main())
    assert [x[0] for x in heard] == [t, t]
    for _, seconds in heard:
        assert 0.0 <= seconds <= 0.01  # what was left of the 10 ms at entry


def test_a_sync_block_is_heard_when_it_ends_past_its_timeout():
    clock = FakeClock()
    t = seawall.timeout(2.0, clock=clock)
    heard = []
    t.on_timeout(lambda _t, seconds: heard.append(seconds))
    with t:
        clock.advance(1.9)
    assert heard == []
    with t:
        clock.advance(2.0)  # expired exactly at start + 2 s
    assert heard == [2.0]

    @t
    def overran():
        clock.advance(3.0)
        raise ValueError("late and failed")

    with pytest.raises(ValueError):
        overran()
    assert heard == [2.0, 2.0]


def test_a_policy_timeout_is_heard_sync_and_async():
    t = seawall.Timeout(0.01)
    heard = []
    t.on_timeout(lambda _t, _s: heard.append("timeout"))
    policy = Policy(timeout=t)
    r = policy.execute(lambda: threading.Event().wait(0.03))
    assert r.overran
    assert heard == ["timeout"]

    async def slow():
        await asyncio.sleep(5)

    with pytest.raises(DeadlineExceededError):
        asyncio.run(policy.execute_async(slow))
    assert heard == ["timeout", "timeout"]


def test_a_raising_timeout_listener_is_logged_and_changes_nothing(caplog):
    t = seawall.timeout(0.01)
    t.on_timeout(lambda _t, _s: 1 / 0)

    async def main():
        async with t:
            await asyncio.sleep(5)

    with caplog.at_level(logging.INFO, logger="seawall"):
        with pytest.raises(DeadlineExceededError):
            asyncio.run(main())
    assert re.search(r"a call ran out of its 0\.0[01]\d s", caplog.text)
    assert "timeout listener" in caplog.text and "ZeroDivisionError" in caplog.text


# -- fallback ----------------------------------------------------------------


def test_fallback_answers_are_heard_with_their_source():
    cache = StaleCache()
    fb = seawall.fallback(cache, lambda key: f"default-{key}")
    heard = []

    @fb.on_fallback
    def listener(fallback, result):
        heard.append((fallback, result.source, type(result.error).__name__, result.value))

    up = {"ok": True}

    @fb
    def get(key):
        if not up["ok"]:
            raise ConnectionError("down")
        return f"fresh-{key}"

    assert get("a") == "fresh-a"
    assert heard == []
    up["ok"] = False
    assert get("a") == "fresh-a"  # the stale copy
    assert get("b") == "default-b"  # nothing cached for b
    assert heard == [(fb, "stale-cache", "ConnectionError", "fresh-a"), (fb, "fallback-1", "ConnectionError", "default-b")]


def test_async_fallback_is_heard_and_a_raising_listener_changes_nothing(caplog):
    fb = seawall.fallback("spare")
    sources = []
    fb.on_fallback(lambda _f, _r: (_ for _ in ()).throw(RuntimeError("listener bug")))
    fb.on_fallback(lambda _f, r: sources.append(r.source))

    async def down():
        raise ConnectionError("down")

    with caplog.at_level(logging.INFO, logger="seawall"):
        r = asyncio.run(Policy(fallback=fb).execute_async(down))
    assert (r.value, r.source, r.degraded) == ("spare", "fallback-1", True)
    assert sources == ["fallback-1"]
    assert "fallback: fallback-1 answered after ConnectionError('down')" in caplog.text
    assert "fallback listener" in caplog.text
