"""One breaker, bulkhead, retry budget or retry throttle shared by every
process of the host (DESIGN §8)."""

import asyncio
import gc
import multiprocessing
import os
import threading
import time
import uuid

import pytest

import seawall
import _mp_workers

pytestmark = pytest.mark.skipif(not seawall._native.SHARED_SUPPORTED, reason="no native 128-bit atomics")

PROCESSES = 4


@pytest.fixture
def region():
    name = f"pytest-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    yield name
    seawall.CircuitBreaker.unlink_shared(name)


def test_four_processes_open_it_once_and_probe_within_half_open_max_calls(region):
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    procs = [ctx.Process(target=_mp_workers.worker, args=(region, barrier, results)) for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    got = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    # 24 calls; the window of 8 opens at the 8th failure it counts, once.
    assert sum(r["failed"] for r in got) + sum(r["rejected"] for r in got) == 24
    assert sum(r["failed"] for r in got) >= 8
    for r in got:
        assert r["state_after_failures"] == "open"
        assert r["transitions_after_failures"] == 1
        assert r["openings_after_failures"] == 1
    # Exactly half_open_max_calls = 2 probes got in; their 2 successes closed it.
    assert sum(r["probe"] for r in got) == 2
    for r in got:
        assert r["final_state"] == "closed"
        assert r["final_transitions"] == 3  # closed→open→half_open→closed
        assert ("closed", "open") in r["seen"] or ("closed", "half_open") in r["seen"]
    # The parent attaches to the same breaker and sees the same totals.
    b = seawall.CircuitBreaker(shared=region, **_mp_workers.CONFIG)
    assert not b._native.created
    m = b.metrics()
    assert m["totals"]["transitions"] == 3 and m["permits_outstanding"] == 0


def test_another_configuration_is_refused(region):
    seawall.CircuitBreaker(shared=region, **_mp_workers.CONFIG)
    other = dict(_mp_workers.CONFIG, minimum_calls=4)
    with pytest.raises(
        seawall.SharedRegionError,
        match="another configuration: minimum_calls differs",
    ):
        seawall.CircuitBreaker(shared=region, **other)


def test_bad_region_names_are_refused():
    with pytest.raises(seawall.SharedRegionError, match="invalid region name"):
        seawall.CircuitBreaker(shared="../etc/passwd")


def test_a_dead_workers_probe_comes_back_without_a_reclaim_call(region):
    cfg = dict(_mp_workers.CONFIG, window=seawall.CountWindow(1), minimum_calls=1, open_duration=0.01,
               half_open_max_calls=1, half_open_success_threshold=1)
    b = seawall.CircuitBreaker(shared=region, **cfg)
    ctx = multiprocessing.get_context("fork")
    with pytest.raises(ValueError):
        b.call(_raise)
    import time

    time.sleep(0.02)
    child = ctx.Process(target=_take_probe_and_die, args=(region, cfg))
    child.start()
    child.join(timeout=30)
    assert child.exitcode == 0
    # Until anyone needs it, the dead worker's probe is reported, not taken
    # back: by the metrics and by the health report (which it leaves degraded).
    assert b.metrics()["permits_abandoned"] == 1
    report = seawall.HealthReport({"db": b}).check()
    assert report["dependencies"]["db"]["abandoned"] == {region: 1}
    assert report["status"] == "degraded"
    # The dead worker holds the only probe slot: the refused caller finds it
    # dead, records its probe as ignored, and probes itself (DESIGN §8).
    assert b.call(lambda: 1) == 1 and b.state == "closed"
    assert b.metrics()["permits_abandoned"] == 0
    assert "abandoned" not in seawall.HealthReport({"db": b}).check()["dependencies"]["db"]
    assert b.metrics()["totals"]["ignored"] == 1
    assert b.reclaim_abandoned() == 0


def _raise():
    raise ValueError()


def _take_probe_and_die(region, cfg):
    b = seawall.CircuitBreaker(shared=region, **cfg)
    permit = b.acquire()  # the only half-open probe...
    os._exit(0 if permit.epoch > 0 else 1)  # ...and the worker dies holding it (no destructor runs)


# -- shared bulkhead -----------------------------------------------------------


@pytest.fixture
def bulkhead_region():
    name = f"pytest-bh-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    yield name
    seawall.Bulkhead.unlink_shared(name)


def _wait_for(predicate, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def test_four_processes_never_hold_more_than_max_concurrent(bulkhead_region):
    # 4 processes × 2 callers (threads with permits, the native decorator, and
    # asyncio tasks), 10 rounds each of a 5 ms hold, on max_concurrent = 2.
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    now, peak = ctx.Value("i", 0), ctx.Value("i", 0)
    results = ctx.Queue()
    modes = ["threads", "decorator", "asyncio", "asyncio"]
    procs = [
        ctx.Process(target=_mp_workers.bulkhead_hammer, args=(bulkhead_region, m, 10, barrier, now, peak, results))
        for m in modes
    ]
    for p in procs:
        p.start()
    got = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    # Every call got in (8 callers, 6 waiting at most: max_queue = 8 is room
    # enough); never more than 2 inside at once, across the processes, and 2
    # at some point.
    assert sorted(r["mode"] for r in got) == sorted(modes)
    # Each process reads the host's totals when it is done: at least its own
    # 20 admissions, at most everyone's 80, never a refusal.
    assert all(20 <= r["admitted"] <= 80 and (r["full"], r["timeouts"]) == (0, 0) for r in got), got
    assert peak.value == 2 and now.value == 0
    bh = seawall.Bulkhead(shared=bulkhead_region, **_mp_workers.BULKHEAD)
    assert not bh._native.created
    m = bh.metrics()
    assert (m["active"], m["queued"], m["permits_outstanding"], m["tickets_outstanding"]) == (0, 0, 0, 0)
    # One set of totals (DESIGN §8): this process made no call and reads all 80.
    assert (m["admitted"], m["rejected_full"], m["rejected_timeout"]) == (80, 0, 0)


def test_waiters_in_other_processes_are_granted_in_fifo_order(bulkhead_region):
    config = dict(max_concurrent=2, max_queue=4)
    bh = seawall.Bulkhead(shared=bulkhead_region, **config)
    held = [bh.try_acquire(), bh.try_acquire()]
    ctx = multiprocessing.get_context("spawn")
    now, peak = ctx.Value("i", 0), ctx.Value("i", 0)
    granted = ctx.Queue()
    procs = []
    for i in range(4):  # one at a time, so the queue order is 0, 1, 2, 3
        p = ctx.Process(target=_mp_workers.bulkhead_waiter,
                        args=(bulkhead_region, i, config, now, peak, granted, 0.3))
        p.start()
        procs.append(p)
        _wait_for(lambda: bh.queued == i + 1, f"waiter {i} to queue")
    assert (bh.active, bh.queued) == (2, 4)
    assert bh.metrics()["tickets_outstanding"] == 4
    for permit in held:
        permit.release()
    order = [granted.get(timeout=30) for _ in range(4)]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    # The two permits given back go to the two oldest waiters; each of those,
    # releasing 0.3 s later, hands its permit to the next in line.
    assert set(order[:2]) == {0, 1} and set(order[2:]) == {2, 3}
    assert peak.value == 2
    m = bh.metrics()
    assert (m["active"], m["queued"], m["permits_outstanding"], m["tickets_outstanding"]) == (0, 0, 0, 0)


def test_a_killed_workers_permit_and_queue_place_come_back_without_a_reclaim_call(bulkhead_region):
    config = dict(max_concurrent=1, max_queue=4)
    bh = seawall.Bulkhead(shared=bulkhead_region, **config)
    ctx = multiprocessing.get_context("spawn")
    holder_ready, waiter_ready = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_mp_workers.bulkhead_hold_forever, args=(bulkhead_region, config, False, holder_ready))
    holder.start()
    assert holder_ready.wait(30)
    assert bh.active == 1
    dead_waiter = ctx.Process(target=_mp_workers.bulkhead_hold_forever, args=(bulkhead_region, config, True, waiter_ready))
    dead_waiter.start()
    assert waiter_ready.wait(30)
    _wait_for(lambda: bh.queued == 1, "the doomed waiter to queue")
    now, peak = ctx.Value("i", 0), ctx.Value("i", 0)
    granted = ctx.Queue()
    live = ctx.Process(target=_mp_workers.bulkhead_waiter, args=(bulkhead_region, 7, config, now, peak, granted, 0.0))
    live.start()
    _wait_for(lambda: bh.queued == 2, "the live waiter to queue")
    assert bh.reclaim_abandoned() == (0, 0)  # everyone is alive
    for p in (holder, dead_waiter):
        p.kill()
        p.join(timeout=30)  # reaped: its pid no longer exists
        assert p.exitcode == -9
    # Nobody calls reclaim: the live waiter, looking at its ticket, finds the
    # holder and the other waiter dead and gives back what they held (DESIGN
    # §8); the permit ends with it.
    assert granted.get(timeout=30) == 7
    live.join(timeout=30)
    assert live.exitcode == 0
    assert bh.reclaim_abandoned() == (0, 0)
    m = bh.metrics()
    assert (m["active"], m["queued"], m["permits_outstanding"], m["tickets_outstanding"]) == (0, 0, 0, 0)
    with bh.try_acquire():
        assert bh.active == 1


def _proc_state(pid):
    """The state letter of /proc/<pid>/stat (read here, apart from the library)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rindex(")") + 1:].split()[0]


def _kill_leaving_a_zombie(process):
    """SIGKILL without join(): the child stays a zombie until it is reaped (no
    other multiprocessing.Process may start meanwhile: start() reaps)."""
    process.kill()
    _wait_for(lambda: _proc_state(process.pid) == "Z", "the killed child to become a zombie")


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="zombies are told apart by /proc")
def test_a_killed_holder_not_yet_reaped_gives_its_permit_back(bulkhead_region):
    config = dict(max_concurrent=1, max_queue=2)
    bh = seawall.Bulkhead(shared=bulkhead_region, **config)
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    holder = ctx.Process(target=_mp_workers.bulkhead_hold_forever, args=(bulkhead_region, config, False, ready))
    holder.start()
    assert ready.wait(30)
    assert bh.active == 1
    _kill_leaving_a_zombie(holder)
    # Its one permit (no ticket) comes back before anyone reaps it.
    assert bh.reclaim_abandoned() == (1, 0)
    assert bh.active == 0
    with bh.try_acquire():
        assert bh.active == 1
    holder.join(timeout=30)
    assert holder.exitcode == -9
    assert bh.reclaim_abandoned() == (0, 0)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="zombies are told apart by /proc")
def test_a_killed_probe_not_yet_reaped_is_reclaimed(region):
    cfg = dict(_mp_workers.CONFIG, window=seawall.CountWindow(1), minimum_calls=1, open_duration=0.01,
               half_open_max_calls=1, half_open_success_threshold=1)
    b = seawall.CircuitBreaker(shared=region, **cfg)
    with pytest.raises(ValueError):
        b.call(_raise)
    time.sleep(0.02)
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    child = ctx.Process(target=_take_probe_and_hang, args=(region, cfg, ready))
    child.start()
    assert ready.wait(30)
    assert b.metrics()["half_open_in_flight"] == 1
    _kill_leaving_a_zombie(child)
    assert b.reclaim_abandoned() == 1
    assert b.metrics()["half_open_in_flight"] == 0
    assert b.call(lambda: 1) == 1 and b.state == "closed"
    child.join(timeout=30)
    assert child.exitcode == -9


def _take_probe_and_hang(region, cfg, ready):
    b = seawall.CircuitBreaker(shared=region, **cfg)
    permit = b.acquire()  # the only half-open probe, held (referenced) until killed
    ready.set()
    time.sleep(120.0)
    permit.ignore()


def test_two_handles_in_one_process_share_permits_and_queue(bulkhead_region):
    a = seawall.Bulkhead(2, 3, shared=bulkhead_region)
    b = seawall.Bulkhead(2, 3, shared=bulkhead_region, name="other-name")
    assert (a.shared, a._native.created, b._native.created) == (True, True, False)
    assert (a.name, b.name, a._native.poll_interval) == (bulkhead_region, "other-name", 0.002)
    p = a.try_acquire()
    q = b.try_acquire()
    with pytest.raises(seawall.BulkheadFullError) as e:
        b.try_acquire()
    assert (e.value.reason, e.value.active, e.value.queued) == ("full", 2, 0)
    ticket = b.enqueue()
    assert isinstance(ticket, seawall.BulkheadTicket) and ticket.state == "waiting"
    assert (a.active, a.queued) == (2, 1)
    p.release()  # through the other handle: the permit goes to the ticket at once
    assert ticket.granted() and ticket.state == "granted" and ticket.granted()
    permit = ticket.take()
    assert permit is not None and ticket.state == "done" and ticket.take() is None
    assert (a.active, a.queued) == (2, 0)
    permit.release()
    with pytest.raises(seawall.PermitAlreadyUsedError):
        permit.release()
    q.release()
    m = a.metrics()
    assert (m["active"], m["queued"], m["permits_outstanding"], m["tickets_outstanding"]) == (0, 0, 0, 0)
    # One set of totals (DESIGN §8): a's 1 admission and b's 2, from either handle.
    assert (m["shared"], a.metrics()["admitted"], b.metrics()["admitted"]) == (True, 3, 3)


def test_a_granted_ticket_given_up_untaken_returns_its_permit(bulkhead_region):
    a = seawall.Bulkhead(1, 2, shared=bulkhead_region)
    b = seawall.Bulkhead(1, 2, shared=bulkhead_region)
    for give_up in ("cancel", "drop"):
        held = a.try_acquire()
        ticket = b.enqueue()
        held.release()
        assert ticket.granted()  # the look took the permit for the ticket
        assert (a.active, a.queued) == (1, 0)
        if give_up == "cancel":
            ticket.cancel()
            assert ticket.state == "done" and ticket.take() is None
        else:
            del ticket
        assert (a.active, a.queued) == (0, 0)
        assert a.metrics()["permits_outstanding"] == 0
    # The same for an asyncio waiter whose look found the grant and that was
    # cancelled before it resumed: abandon() gives the permit back.
    native = b._native
    held = a.try_acquire()

    async def look_then_cancel():
        loop = asyncio.get_running_loop()
        t = native.enter_async("normal", loop, loop.create_future())
        assert isinstance(t, int) and not native.is_granted(t)
        held.release()
        assert native.is_granted(t)
        native.abandon(t)

    asyncio.run(look_then_cancel())
    assert (a.active, a.queued) == (0, 0) and a.metrics()["permits_outstanding"] == 0


def test_shared_waiters_see_grants_by_polling_and_time_out_cleanly(bulkhead_region):
    a = seawall.Bulkhead(1, 4, shared=bulkhead_region)
    b = seawall.Bulkhead(1, 4, shared=bulkhead_region)
    held = a.acquire()
    t0 = time.monotonic()
    with pytest.raises(seawall.BulkheadFullError) as e:
        b.acquire(timeout=0.1)
    assert 0.09 <= time.monotonic() - t0 < 1.0
    assert (e.value.reason, e.value.active, e.value.queued) == ("timeout", 1, 0)

    async def main():
        waiter = asyncio.ensure_future(b.acquire_async())
        await asyncio.sleep(0.02)
        assert b.queued == 1 and not waiter.done()
        held.release()  # no wake-up reaches b: its waiter finds the grant by polling
        permit = await asyncio.wait_for(waiter, 2.0)
        assert a.active == 1
        permit.release()
        with pytest.raises(asyncio.TimeoutError):
            async with a:
                await asyncio.wait_for(b.acquire_async(), 0.05)

    asyncio.run(main())
    got = []
    held = a.acquire()
    t = threading.Thread(target=lambda: got.append(b.acquire(timeout=5.0)))
    t.start()
    _wait_for(lambda: b.queued == 1, "the thread to queue")
    held.release()
    t.join()
    got[0].release()
    m = a.metrics()
    assert (m["active"], m["queued"], m["permits_outstanding"], m["tickets_outstanding"]) == (0, 0, 0, 0)
    assert b.metrics()["rejected_timeout"] == 1


def test_bulkhead_with_another_configuration_is_refused(bulkhead_region):
    seawall.Bulkhead(4, 8, shared=bulkhead_region)
    for other, differing in (
        (dict(max_concurrent=3, max_queue=8), "semaphore.max_concurrent differs"),
        (dict(max_concurrent=4, max_queue=7), "semaphore.max_queue differs"),
        (dict(max_concurrent=4, max_queue=8, shares={"low": 50}), "semaphore.priority_shares differs"),
    ):
        with pytest.raises(seawall.SharedRegionError) as e:
            seawall.Bulkhead(shared=bulkhead_region, **other)
        msg = str(e.value)
        assert "another configuration" in msg and bulkhead_region in msg
        assert "max_concurrent, max_queue and shares" in msg
        assert f"another configuration: {differing} (fingerprint" in msg
        assert f"max_concurrent={other['max_concurrent']}, max_queue={other['max_queue']}" in msg
    assert "low = 100/100/100/50 %" in msg
    assert seawall.Bulkhead(4, 8, shared=bulkhead_region).max_concurrent == 4


def test_shared_bulkhead_config_is_checked_before_the_region_is_touched(bulkhead_region):
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.Bulkhead(4097, shared=bulkhead_region)
    assert e.value.field == "max_concurrent" and "4096" in str(e.value)
    assert seawall.Bulkhead(4097).max_concurrent == 4097  # a local one may be larger
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.Bulkhead(2, 1025, shared=bulkhead_region)
    assert e.value.field == "max_queue"
    assert not os.path.exists(f"/dev/shm/seawall-semaphore-{bulkhead_region}")
    with pytest.raises(seawall.SharedRegionError, match="invalid region name"):
        seawall.Bulkhead(2, shared="no/slashes")
    assert seawall.Bulkhead(2).reclaim_abandoned() == (0, 0)


# -- shared retry budget and throttle ------------------------------------------


@pytest.fixture
def retry_regions():
    tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    names = (f"pytest-budget-{tag}", f"pytest-throttle-{tag}")
    yield names
    seawall.RetryBudget.unlink_shared(names[0])
    seawall.RetryThrottle.unlink_shared(names[1])


def test_four_processes_share_one_retry_budget_and_one_throttle(retry_regions):
    bname, tname = retry_regions
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    procs = [ctx.Process(target=_mp_workers.retry_worker, args=(bname, tname, i, barrier, results))
             for i in range(PROCESSES)]
    for p in procs:
        p.start()
    got = sorted((results.get(timeout=60) for _ in procs), key=lambda r: r["index"])
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    # One process created each region; the others attached.
    assert sum(r["created"][0] for r in got) == 1 and sum(r["created"][1] for r in got) == 1
    # Budget: processes 0 and 1 deposited 40 requests at 30 % = 12.0 retries
    # (no reserve); 20 withdrawals raced in 4 processes and exactly 12 got one.
    assert sum(r["withdrawn"] for r in got) == 12
    budget = seawall.RetryBudget(shared=bname, **_mp_workers.BUDGET)
    assert not budget.created
    # One set of totals: the 20 raced withdrawals, 12 allowed and 8 refused,
    # read in a process that made none.
    assert budget.snapshot() == {"requests": 40, "retries": 12, "available": 0, "allowed": 12, "refused": 8}
    for _ in range(3):
        budget.deposit()  # 43 · 0.3 = 12.9: 0.9 of a retry left, not a whole one
    assert budget.available == 0 and not budget.try_withdraw()
    budget.deposit()  # 44 · 0.3 = 13.2: one more whole retry
    assert budget.available == 1
    assert budget.try_withdraw() and not budget.try_withdraw()
    # Here: one refused, one allowed, one refused.
    assert budget.snapshot() == {"requests": 44, "retries": 13, "available": 0, "allowed": 13, "refused": 10}
    # Throttle: 8 racing failures took 10 tokens to 9, 8, 7, 6 (retry allowed:
    # more than half of 10 left), 5, 4, 3, 2 (refused): exactly 4 allowed. Then
    # 12 successes at 0.5 added 6: 8 tokens.
    assert sum(r["allowed"] for r in got) == 4
    throttle = seawall.RetryThrottle(shared=tname, **_mp_workers.THROTTLE)
    assert not throttle.created and throttle.tokens == 8.0
    assert [throttle.record_failure() for _ in range(3)] == [True, True, False]  # 7, 6, 5
    for _ in range(20):
        throttle.record_success()  # 5 + 10, clamped at max_tokens
    assert throttle.tokens == 10.0


def test_a_retry_policy_draws_on_a_budget_shared_with_another_handle(retry_regions):
    bname, _ = retry_regions
    cfg = dict(ttl=60.0, min_retries_per_sec=0, percent_can_retry=50.0)
    theirs = seawall.RetryBudget(shared=bname, **cfg)
    ours = seawall.RetryBudget(shared=bname, **cfg)
    assert ours.shared and theirs.created and not ours.created and ours.name == bname
    for _ in range(4):
        theirs.deposit()  # 4 · 0.5 = 2 retries, deposited by "another worker"
    calls = []

    def flaky():
        calls.append(1)
        raise OSError("down")

    r = seawall.Retry(attempts=10, backoff=seawall.Backoff(base=0.0001, jitter="none"), budget=ours)
    with pytest.raises(OSError):
        r(flaky)()
    # Its own request deposits 0.5 more: 2.5, so 2 retries, then the budget says no.
    assert len(calls) == 3 and r.stats()["budget_exhausted"] == 1
    # Its 2 retries allowed and the third refused, counted in the shared region.
    assert theirs.snapshot() == {"requests": 5, "retries": 2, "available": 0, "allowed": 2, "refused": 1}


def test_budget_and_throttle_with_another_configuration_are_refused(retry_regions):
    bname, tname = retry_regions
    seawall.RetryBudget(10.0, 10, 20.0, shared=bname)
    with pytest.raises(seawall.SharedRegionError) as e:
        seawall.RetryBudget(10.0, 10, 25.0, shared=bname)
    assert "another configuration" in str(e.value) and bname in str(e.value)
    assert "ttl, min_retries_per_sec and percent_can_retry" in str(e.value)
    assert "another configuration: retry_budget.percent_can_retry differs" in str(e.value)
    seawall.RetryThrottle(10, 0.1, shared=tname)
    with pytest.raises(seawall.SharedRegionError) as e:
        seawall.RetryThrottle(10, 0.2, shared=tname)
    assert "another configuration" in str(e.value) and "max_tokens and token_ratio" in str(e.value)
    assert "another configuration: retry_throttle.token_ratio differs" in str(e.value)
    # A bad value is a config error naming the field, before any region is made.
    seawall.RetryThrottle.unlink_shared(tname)
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.RetryThrottle(0, shared=tname)
    assert e.value.field == "max_tokens"
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.RetryBudget(ttl=0.0001, shared=bname + "-other")
    assert e.value.field == "ttl"
    assert not os.path.exists(f"/dev/shm/seawall-retry-throttle-{tname}")
    assert not os.path.exists(f"/dev/shm/seawall-retry-budget-{bname}-other")
    with pytest.raises(seawall.SharedRegionError, match="invalid region name"):
        seawall.RetryBudget(shared="")
    assert not seawall.RetryThrottle().shared and seawall.RetryThrottle().created


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_dropping_its_copy_leaves_the_parents_permit_held(bulkhead_region):
    # The parent holds the only permit and forks; the child exits without touching
    # it. Its copy of the permit object is dropped on the way out: that must not
    # release the parent's permit (max_concurrent = 1 would then admit a second).
    b = seawall.Bulkhead(1, max_queue=2, shared=bulkhead_region)
    permit = b.acquire()
    ticket = b.enqueue()  # a place in the queue the child also inherits
    pid = os.fork()
    if pid == 0:
        try:
            del permit, ticket  # the child's copies, dropped as at its exit
            gc.collect()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (b.active, b.queued) == (1, 1)
    with pytest.raises(seawall.BulkheadFullError):
        b.try_acquire()
    permit.release()  # the parent's own release hands the permit to its ticket
    assert ticket.granted()
    ticket.take().release()
    assert (b.active, b.queued) == (0, 0)


def test_a_planted_symlink_is_refused_and_its_target_untouched(tmp_path):
    # DESIGN §8: a region is its creator's own; a link at its name is never followed.
    name = f"py-trust-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    link = f"/dev/shm/seawall-breaker-{name}"
    target = tmp_path / "target"
    target.write_bytes(b"not yours")
    os.symlink(target, link)
    try:
        started = time.monotonic()
        with pytest.raises(seawall.SharedRegionError, match="symbolic link"):
            seawall.CircuitBreaker(shared=name)
        assert time.monotonic() - started < 0.5
        assert target.read_bytes() == b"not yours"
    finally:
        os.unlink(link)


def test_a_region_others_may_write_is_refused(region):
    seawall.CircuitBreaker(shared=region, **_mp_workers.CONFIG)
    path = f"/dev/shm/seawall-breaker-{region}"
    os.chmod(path, 0o666)
    with pytest.raises(seawall.SharedRegionError, match="0666"):
        seawall.CircuitBreaker(shared=region, **_mp_workers.CONFIG)
    os.chmod(path, 0o600)
    assert not seawall.CircuitBreaker(shared=region, **_mp_workers.CONFIG)._native.created


def test_a_full_permit_table_is_a_typed_refusal(region):
    b = seawall.CircuitBreaker(shared=region, **_mp_workers.CONFIG)
    # The host's permit table holds 4096 calls admitted and not yet recorded.
    held = [b.acquire() for _ in range(4096)]
    with pytest.raises(seawall.PermitsExhaustedError) as e:
        b.acquire()
    err = e.value
    assert isinstance(err, seawall.CircuitOpenError)  # a refusal: a 503 handler answers it
    assert (err.limit, err.name, err.state, err.retry_after) == (4096, region, "closed", None)
    assert "4096" in str(err)
    with pytest.raises(seawall.PermitsExhaustedError):
        b.call(lambda: "never runs")
    held.pop().success()
    assert b.call(lambda: "runs") == "runs"
    for p in held:
        p.ignore()
    assert b.metrics()["permits_outstanding"] == 0


def test_an_overwritten_bulkhead_region_is_a_shared_region_error_not_a_count(bulkhead_region):
    # DESIGN §8: values read from a region are checked against the configuration
    # this process holds. The core semaphore's state word is the first word
    # after the 128-byte header, `active` in its low 20 bits.
    pool = seawall.Bulkhead(4, 0, shared=bulkhead_region)
    with pool.try_acquire():
        assert pool.metrics()["active"] == 1
    with open(f"/dev/shm/seawall-semaphore-{bulkhead_region}", "r+b") as f:
        f.seek(128)
        f.write((693_800).to_bytes(8, "little"))
    with pytest.raises(seawall.SharedRegionError):
        pool.metrics()
    with pytest.raises(seawall.SharedRegionError):
        pool.try_acquire()
    with pytest.raises(seawall.SharedRegionError):
        pool.active
    assert "region corrupt" in repr(pool) and pool.max_concurrent == 4


def test_the_health_report_of_an_overwritten_breaker_region_is_unhealthy_not_an_error(region):
    # DESIGN §8: an overwritten region is reported as such. Opened for 60 s,
    # then its open_until (the high half of the core's first 128-bit word,
    # after the 128-byte header) is made 54 years away.
    b = seawall.CircuitBreaker(shared=region, consecutive_failures=1, open_duration=60.0)
    with pytest.raises(ValueError):
        b.call(_raise)
    report = seawall.HealthReport({"db": b})
    assert report.check()["status"] == "unhealthy"  # open: honest
    with open(f"/dev/shm/seawall-breaker-{region}", "r+b") as f:
        f.seek(128 + 8)
        now_ns = time.monotonic_ns()
        f.write((now_ns + 1_713_643_524_538 * 1_000_000).to_bytes(8, "little"))
    doc = report.check()
    assert doc["status"] == "unhealthy"
    assert doc["dependencies"]["db"]["breakers"] == {region: "unknown"}
    assert "never gives" in doc["dependencies"]["db"]["errors"][region]
    status, body = report.answer()
    assert status == 503 and b'"unknown"' in body
