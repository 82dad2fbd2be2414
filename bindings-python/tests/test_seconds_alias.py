"""Every duration keyword typed ``seawall.Seconds`` takes a ``timedelta`` at
run time too, with the same meaning as the number of seconds."""

import asyncio
from datetime import timedelta

import pytest

import seawall
from seawall import Bulkhead, BulkheadFullError, StaleCache, TimeWindow


def test_a_time_window_of_a_timedelta_has_the_same_bucket_width():
    assert TimeWindow(timedelta(seconds=10), buckets=4).bucket_width == 2.5


def test_bulkhead_acquire_waits_a_timedelta():
    pool = Bulkhead(1, max_queue=1)
    held = pool.acquire(timeout=timedelta(milliseconds=5))
    with pytest.raises(BulkheadFullError) as e:
        pool.acquire(timeout=timedelta(milliseconds=5))
    assert e.value.reason == "timeout"

    async def main():
        with pytest.raises(BulkheadFullError) as e:
            await pool.acquire_async(timeout=timedelta(milliseconds=5))
        assert e.value.reason == "timeout"

    asyncio.run(main())
    held.release()


def test_a_stale_cache_keeps_entries_for_a_timedelta():
    cache = StaleCache(max_stale=timedelta(minutes=5))
    cache.put((1,), {}, "v")
    assert cache.get((1,), {}) == "v"


def test_seconds_is_the_union_of_both():
    assert seawall.Seconds.__args__ == (float, timedelta)


def test_a_retry_budget_and_health_take_timedeltas_as_their_seconds():
    from conftest import FakeClock

    clock = FakeClock()
    # min 1 retry/s over a 2 s ttl: 2 retries in reserve (Finagle), with no requests.
    budget = seawall.RetryBudget(timedelta(seconds=2), 1, 0.0, clock=clock)
    same = seawall.RetryBudget(2.0, 1, 0.0, clock=clock)
    assert [budget.try_withdraw() for _ in range(3)] == [same.try_withdraw() for _ in range(3)] == [True, True, False]
    h = seawall.Health(bucket_width=timedelta(milliseconds=500), degraded_p99=timedelta(seconds=1),
                       unhealthy_p99=timedelta(seconds=3))
    for _ in range(10):
        h.record(2.0)
    assert h.status == "degraded"
