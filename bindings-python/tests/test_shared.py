"""One breaker shared by every process of the host (DESIGN §8)."""

import multiprocessing
import os
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
    with pytest.raises(seawall.SharedRegionError, match="another configuration"):
        seawall.CircuitBreaker(shared=region, **other)


def test_bad_region_names_are_refused():
    with pytest.raises(seawall.SharedRegionError, match="invalid region name"):
        seawall.CircuitBreaker(shared="../etc/passwd")


def test_a_dead_workers_probe_is_reclaimed(region):
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
    with pytest.raises(seawall.CircuitOpenError):  # the dead worker holds the only probe slot
        b.call(lambda: 1)
    assert b.reclaim_abandoned() == 1
    assert b.call(lambda: 1) == 1 and b.state == "closed"


def _raise():
    raise ValueError()


def _take_probe_and_die(region, cfg):
    b = seawall.CircuitBreaker(shared=region, **cfg)
    permit = b.acquire()  # the only half-open probe...
    os._exit(0 if permit.epoch > 0 else 1)  # ...and the worker dies holding it (no destructor runs)
