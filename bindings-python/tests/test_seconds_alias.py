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
