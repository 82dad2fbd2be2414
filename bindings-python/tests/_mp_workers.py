"""Worker processes for test_shared.py and test_self_healing.py (spawned or
forked by a fork server: they import this module)."""

import random
import time

import seawall

CONFIG = dict(
    window=seawall.CountWindow(8),
    minimum_calls=8,
    failure_rate_threshold=50.0,
    open_duration=2.0,
    half_open_max_calls=2,
    half_open_success_threshold=2,
)


def worker(name, barrier, results):
    seen = []
    b = seawall.CircuitBreaker(shared=name, listeners=[lambda br, o, n: seen.append((o.value, n.value))], **CONFIG)
    rejected = failed = 0

    def fail():
        raise ValueError("dependency down")

    barrier.wait()
    for _ in range(6):
        try:
            b.call(fail)
        except ValueError:
            failed += 1
        except seawall.CircuitOpenError:
            rejected += 1
    barrier.wait()  # everyone is done failing
    after_failures = b.metrics()
    time.sleep(2.1)  # past open_duration
    barrier.wait()
    probe = False
    try:
        with b:
            probe = True
            time.sleep(1.0)  # probes hold their slots while the others try
    except seawall.CircuitOpenError:
        pass
    barrier.wait()
    b.poll()
    results.put(
        dict(
            failed=failed,
            rejected=rejected,
            probe=probe,
            transitions_after_failures=after_failures["totals"]["transitions"],
            openings_after_failures=after_failures["openings"],
            state_after_failures=after_failures["state"],
            final_state=b.state.value,
            final_transitions=b.metrics()["totals"]["transitions"],
            seen=seen,
        )
    )


# -- shared bulkhead -----------------------------------------------------------

BULKHEAD = dict(max_concurrent=2, max_queue=8, queue_timeout=30.0)


class InUse:
    """Callers inside the bulkhead right now, counted across processes (a
    `multiprocessing.Value` under its lock), and the most at once."""

    def __init__(self, now, peak):
        self.now, self.peak = now, peak

    def __enter__(self):
        with self.now.get_lock():
            self.now.value += 1
            self.peak.value = max(self.peak.value, self.now.value)

    def __exit__(self, *exc):
        with self.now.get_lock():
            self.now.value -= 1


def bulkhead_hammer(name, mode, rounds, barrier, now, peak, results):
    """Two callers of this process (threads, or asyncio tasks) each take a permit
    `rounds` times and hold it 5 ms, in one of the package's forms."""
    import asyncio
    import threading

    bh = seawall.Bulkhead(shared=name, **BULKHEAD)
    inside = InUse(now, peak)

    def hold():
        with inside:
            time.sleep(0.005)

    @bh
    def decorated():
        hold()

    def with_permit():
        with bh.acquire():
            hold()

    async def with_async():
        async with bh:
            with inside:
                await asyncio.sleep(0.005)

    barrier.wait()
    if mode in ("threads", "decorator"):
        call = decorated if mode == "decorator" else with_permit
        threads = [threading.Thread(target=lambda: [call() for _ in range(rounds)]) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:

        async def caller():
            for _ in range(rounds):
                await with_async()

        async def main():
            await asyncio.gather(caller(), caller())

        asyncio.run(main())
    m = bh.metrics()
    results.put(dict(mode=mode, admitted=m["admitted"], full=m["rejected_full"], timeouts=m["rejected_timeout"]))


def bulkhead_waiter(name, index, config, now, peak, granted, hold):
    """Queue for a permit (the parent holds them all), note the order of the
    grant, hold it `hold` seconds, give it back."""
    bh = seawall.Bulkhead(shared=name, **config)
    with bh.acquire(timeout=30.0):
        with InUse(now, peak):
            granted.put(index)
            time.sleep(hold)


def bulkhead_hold_forever(name, config, wait, ready):
    """Take a permit (or, with `wait`, queue for one) and never give it back."""
    bh = seawall.Bulkhead(shared=name, **config)
    if wait:
        ready.set()
        bh.acquire(timeout=120.0)  # killed while it waits
    else:
        permit = bh.try_acquire()
        ready.set()
        time.sleep(120.0)  # killed while it holds
        permit.release()


# -- a kill storm on a shared bulkhead's queue ----------------------------------

STORM = dict(max_concurrent=3, max_queue=8)


def queue_churn(name, seed):
    """Until killed: take and give up permits and queue places of the shared
    bulkhead `name` in every way a caller has: `enqueue()` tickets looked at a
    random number of times, then taken or cancelled; `acquire()` waiting up to
    10 ms; `try_acquire()`. Each permit is held for up to 2 ms."""
    rng = random.Random(seed)
    bh = seawall.Bulkhead(shared=name, **STORM)
    while True:
        way = rng.randrange(3)
        try:
            if way == 0:
                got = bh.enqueue()
                if isinstance(got, seawall.BulkheadTicket):
                    for _ in range(rng.randrange(1, 40)):
                        if got.granted():
                            break
                        time.sleep(0.0002)
                    permit = got.take()
                    if permit is None:
                        got.cancel()
                        continue
                else:
                    permit = got
            elif way == 1:
                permit = bh.acquire(timeout=rng.uniform(0.0, 0.01))
            else:
                permit = bh.try_acquire()
        except seawall.BulkheadFullError:
            continue
        time.sleep(rng.uniform(0.0, 0.002))
        permit.release()


# -- shared retry budget and throttle ------------------------------------------

BUDGET = dict(ttl=60.0, min_retries_per_sec=0, percent_can_retry=30.0)
THROTTLE = dict(max_tokens=10.0, token_ratio=0.5)


def retry_worker(budget_name, throttle_name, index, barrier, results):
    """Phases in step with the other workers: processes 0 and 1 deposit 20
    requests each; then all four race 5 budget withdrawals and 2 throttle
    failures each; then each records 3 throttle successes."""
    budget = seawall.RetryBudget(shared=budget_name, **BUDGET)
    throttle = seawall.RetryThrottle(shared=throttle_name, **THROTTLE)
    barrier.wait()
    if index < 2:
        for _ in range(20):
            budget.deposit()
    barrier.wait()
    withdrawn = sum(budget.try_withdraw() for _ in range(5))
    allowed = sum(throttle.record_failure() for _ in range(2))
    barrier.wait()
    for _ in range(3):
        throttle.record_success()
    barrier.wait()
    results.put(dict(index=index, withdrawn=withdrawn, allowed=allowed,
                     created=(budget.created, throttle.created)))
