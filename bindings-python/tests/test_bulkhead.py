"""Bulkhead with threads and asyncio: limits, queueing, load shedding, FIFO
hand-off, timeouts and cancelled waiters that never leak a permit."""

import asyncio
import random
import threading
import time

import pytest

import seawall
from seawall import Bulkhead, BulkheadFullError


class Peak:
    """Counts calls inside a region and remembers the most at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def __enter__(self):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc):
        with self.lock:
            self.now -= 1


def test_threads_never_exceed_max_concurrent():
    bh = Bulkhead(2, 10)
    peak = Peak()

    @bh
    def work():
        with peak:
            time.sleep(0.05)
        return 1

    results = []
    threads = [threading.Thread(target=lambda: results.append(work())) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [1] * 6 and peak.peak == 2
    assert (bh.active, bh.queued) == (0, 0)
    assert bh.metrics()["admitted"] == 6


def test_full_queue_is_refused_with_occupancy():
    bh = Bulkhead(1, 1, queue_timeout=5.0, name="bh")
    held = bh.acquire()
    waiter_got = []
    t = threading.Thread(target=lambda: waiter_got.append(bh.acquire()))
    t.start()
    while bh.queued == 0:
        time.sleep(0.001)
    with pytest.raises(BulkheadFullError) as e:
        bh.acquire()
    assert (e.value.reason, e.value.active, e.value.queued, e.value.name) == ("full", 1, 1, "bh")
    held.release()
    t.join()
    waiter_got[0].release()
    assert (bh.active, bh.queued) == (0, 0)


def test_queue_timeout_leaves_the_queue():
    bh = Bulkhead(1, 3, queue_timeout=0.1)
    held = bh.acquire()
    t0 = time.monotonic()
    with pytest.raises(BulkheadFullError) as e:
        bh.acquire()
    assert 0.09 <= time.monotonic() - t0 < 0.5
    assert (e.value.reason, e.value.active, e.value.queued) == ("timeout", 1, 0)
    held.release()
    assert (bh.active, bh.queued) == (0, 0)
    assert bh.metrics()["rejected_timeout"] == 1


def test_waiting_thread_releases_the_gil():
    bh = Bulkhead(1, 1)
    held = bh.acquire()
    t = threading.Thread(target=lambda: bh.acquire(timeout=0.3))
    t.start()
    # While it waits, this thread keeps running Python code.
    spins, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < 0.2:
        spins += 1
    assert spins > 10_000
    held.release()
    t.join()
    assert (bh.active, bh.queued) == (0, 0)


def test_load_shedding_refuses_at_once_even_with_queue_room():
    bh = Bulkhead(10, 10, shares={"high": 80, "normal": 50, "low": 20})
    assert [bh.limit(p) for p in ("critical", "high", "normal", "low")] == [10, 8, 5, 2]
    lows = [bh.try_acquire("low"), bh.try_acquire("low")]
    with pytest.raises(BulkheadFullError) as e:
        bh.acquire("low", timeout=1.0)
    assert (e.value.reason, e.value.active, e.value.queued) == ("shed", 2, 0)
    more = [bh.try_acquire("critical") for _ in range(8)]
    with pytest.raises(BulkheadFullError) as e:
        bh.try_acquire("critical")
    assert e.value.reason == "full"
    for p in lows + more:
        p.release()
    assert bh.active == 0


def test_hand_off_is_fifo_whatever_the_priority():
    bh = Bulkhead(1, 3)
    holder = bh.try_acquire()
    tickets = [bh.enqueue(p) for p in ("low", "critical", "normal")]
    assert all(isinstance(t, seawall.BulkheadTicket) for t in tickets)
    order = []
    permit = holder
    for _ in range(3):
        permit.release()
        granted = [i for i, t in enumerate(tickets) if t.granted()]
        assert len(granted) == 1
        order.append(granted[0])
        permit = tickets[granted[0]].take()
    permit.release()
    assert order == [0, 1, 2] and (bh.active, bh.queued) == (0, 0)


def test_permit_released_once_and_dropped_ones_come_back():
    bh = Bulkhead(1)
    p = bh.acquire()
    p.release()
    with pytest.raises(seawall.PermitAlreadyUsedError):
        p.release()
    bh.acquire()  # dropped at once
    assert bh.active == 0
    with bh:
        assert bh.active == 1
    assert bh.active == 0


def test_asyncio_waiters_are_woken_by_releases():
    bh = Bulkhead(3, 10)
    peak = Peak()

    @bh
    async def work(i):
        with peak:
            await asyncio.sleep(0.02)
        return i

    async def main():
        return await asyncio.gather(*(work(i) for i in range(10)))

    t0 = time.monotonic()
    assert asyncio.run(main()) == list(range(10))
    # 10 calls, 3 at a time, 20 ms each: 4 rounds; polling would show as far more.
    assert time.monotonic() - t0 < 0.5
    assert peak.peak == 3 and (bh.active, bh.queued) == (0, 0)


def test_cancelled_async_waiters_leave_the_queue_and_leak_nothing():
    bh = Bulkhead(1, 10)

    async def main():
        holder = await bh.acquire_async()
        got = []

        async def wait(i):
            async with bh:
                got.append(i)

        tasks = [asyncio.ensure_future(wait(i)) for i in range(5)]
        await asyncio.sleep(0.01)
        assert bh.queued == 5
        for i in (0, 2, 3):
            tasks[i].cancel()
        await asyncio.sleep(0.01)
        assert bh.queued == 2
        holder.release()
        await asyncio.gather(*tasks, return_exceptions=True)
        return got

    assert asyncio.run(main()) == [1, 4]
    assert (bh.active, bh.queued) == (0, 0)


def test_async_queue_timeout():
    bh = Bulkhead(1, 2, queue_timeout=0.05)

    async def main():
        holder = await bh.acquire_async()
        with pytest.raises(BulkheadFullError) as e:
            await bh.acquire_async()
        assert e.value.reason == "timeout"
        holder.release()

    asyncio.run(main())
    assert (bh.active, bh.queued) == (0, 0)


def test_cancellation_and_timeouts_racing_releases_never_leak():
    bh = Bulkhead(2, 50)
    rng = random.Random(7)
    done = []

    async def one(i):
        try:
            permit = await asyncio.wait_for(bh.acquire_async(), rng.uniform(0.0, 0.01))
        except (asyncio.TimeoutError, BulkheadFullError):  # cancelled waiting, or no room
            return
        await asyncio.sleep(rng.uniform(0.0, 0.003))
        permit.release()
        done.append(i)

    async def main():
        await asyncio.gather(*(one(i) for i in range(300)))

    asyncio.run(main())
    assert (bh.active, bh.queued) == (0, 0)
    assert len(done) == bh.metrics()["admitted"]
    assert 0 < len(done) <= 300


def test_threads_timing_out_while_others_release_never_leak():
    bh = Bulkhead(2, 20)

    def one(seed):
        rng = random.Random(seed)
        for _ in range(50):
            try:
                p = bh.acquire(timeout=rng.uniform(0.0, 0.002))
            except BulkheadFullError:
                continue
            time.sleep(rng.uniform(0.0, 0.001))
            p.release()

    threads = [threading.Thread(target=one, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (bh.active, bh.queued) == (0, 0)


def test_polling_mode_still_hands_permits_over():
    # The mode a bulkhead shared with other processes needs: no wake-ups, only
    # re-polls of the ticket every _poll_interval seconds.
    bh = Bulkhead(1, 5, _poll_only=True, _poll_interval=0.01)

    async def main():
        holder = await bh.acquire_async()
        waiter = asyncio.ensure_future(bh.acquire_async())
        await asyncio.sleep(0.02)
        holder.release()
        p = await asyncio.wait_for(waiter, 1.0)
        p.release()

    asyncio.run(main())
    held = bh.acquire()
    got = []
    t = threading.Thread(target=lambda: got.append(bh.acquire(timeout=2.0)))
    t.start()
    time.sleep(0.02)
    held.release()
    t.join()
    got[0].release()
    assert (bh.active, bh.queued) == (0, 0)


@pytest.mark.parametrize(
    "args, kwargs, field",
    [((0,), {}, "max_concurrent"), ((2**20,), {}, "max_concurrent"),
     ((1, -1), {}, "max_queue"), ((1, 32769), {}, "max_queue"),
     ((1,), {"shares": {"low": 150}}, "shares"), ((1,), {"shares": {"urgent": 10}}, "shares"),
     ((1,), {"priority": "urgent"}, "priority"), ((1,), {"queue_timeout": -1}, "queue_timeout")],
)
def test_invalid_bulkhead_config(args, kwargs, field):
    with pytest.raises(seawall.SeawallConfigError) as e:
        Bulkhead(*args, **kwargs)
    assert e.value.field == field


def test_a_local_bulkhead_takes_up_to_2_pow_20_minus_1_permits():
    # The core semaphore's 64-bit state word counts 20 bits of permits.
    bh = Bulkhead(2**20 - 1)
    assert bh.max_concurrent == 1048575
    with pytest.raises(seawall.SeawallConfigError, match="1048575"):
        Bulkhead(2**20)


def test_a_local_queue_holds_as_many_waiters_as_node_allows():
    # One rule in seawall-host for both bindings: 0 ..= 32768 waiters locally.
    assert seawall._native.QUEUE_CAPACITY == 32768
    bh = Bulkhead(1, 32768)
    assert bh.max_queue == 32768
    held = bh.try_acquire()
    tickets = [bh.enqueue() for _ in range(2000)]
    assert (bh.active, bh.queued) == (1, 2000)
    held.release()
    assert [t.granted() for t in tickets[:2]] == [True, False]
    for t in tickets:
        t.cancel()
    assert (bh.active, bh.queued) == (0, 0)


def test_an_async_generator_holds_its_permit_until_it_is_exhausted_or_closed():
    # max_concurrent 1, no queue: while one generator is being iterated, a second
    # one is refused at its first step; once the first is exhausted (or closed),
    # the permit is back.
    pool = seawall.Bulkhead(1, max_queue=0)

    @pool
    async def numbers(n):
        for i in range(n):
            yield i

    async def main():
        first = numbers(3)
        assert await first.__anext__() == 0
        assert pool.active == 1
        with pytest.raises(seawall.BulkheadFullError):
            await numbers(1).__anext__()
        assert [i async for i in first] == [1, 2]
        assert pool.active == 0
        second = numbers(5)
        assert await second.__anext__() == 0
        await second.aclose()
        assert pool.active == 0
        return [i async for i in numbers(2)]

    assert asyncio.run(main()) == [0, 1]


def test_an_object_with_an_async_call_is_limited_while_it_runs():
    pool = seawall.Bulkhead(1, max_queue=0)
    running = []

    class Job:
        async def __call__(self, i):
            running.append(i)
            await asyncio.sleep(0.01)
            return pool.active

    job = pool(Job())

    async def main():
        return await asyncio.gather(job(1), job(2), return_exceptions=True)

    first, second = asyncio.run(main())
    assert first == 1  # the permit was held while the body ran
    assert isinstance(second, seawall.BulkheadFullError)
    assert running == [1] and pool.active == 0
