"""The Prometheus collector exports exactly the counts the objects made."""

import pytest

prometheus_client = pytest.importorskip("prometheus_client")
from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

import os  # noqa: E402

import seawall  # noqa: E402
from seawall.prometheus import SeawallCollector  # noqa: E402

#: A per-process series' label: this process's pid.
PID = ("pid", str(os.getpid()))


def samples(registry):
    """Every sample by (name, sorted labels); a label set exported twice fails."""
    out = {}
    for fam in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in out, f"duplicate series {key}"
            out[key] = s.value
    return out


def test_exports_breaker_bulkhead_and_retry_counts():
    b = seawall.CircuitBreaker(window=seawall.CountWindow(4), minimum_calls=4, name="pay")
    bh = seawall.Bulkhead(1, 0, name="pool")
    r = seawall.Retry(attempts=3, backoff=seawall.Backoff(base=0.001, jitter="none"), name="rt")

    for _ in range(3):
        b.call(lambda: 1)
    try:
        b.call(_fail)
    except OSError:
        pass
    held = bh.acquire()
    for _ in range(2):
        try:
            bh.try_acquire()
        except seawall.BulkheadFullError:
            pass
    try:
        r(_fail)()
    except OSError:
        pass

    reg = CollectorRegistry()
    reg.register(SeawallCollector(b, bh, r))
    s = samples(reg)
    assert s[("seawall_circuit_breaker_state", (("name", "pay"), ("state", "closed")))] == 1.0
    assert s[("seawall_circuit_breaker_state", (("name", "pay"), ("state", "open")))] == 0.0
    assert s[("seawall_circuit_breaker_calls_total", (("name", "pay"), ("outcome", "success")))] == 3.0
    assert s[("seawall_circuit_breaker_calls_total", (("name", "pay"), ("outcome", "failure")))] == 1.0
    assert s[("seawall_circuit_breaker_rejections_total", (("name", "pay"),))] == 0.0
    assert s[("seawall_bulkhead_active", (("name", "pool"),))] == 1.0
    assert s[("seawall_bulkhead_queued", (("name", "pool"),))] == 0.0
    assert s[("seawall_bulkhead_rejections_total", (("name", "pool"), ("reason", "full")))] == 2.0
    assert s[("seawall_retries_allowed_total", (("name", "rt"), PID))] == 2.0
    assert s[("seawall_retries_denied_total", (("name", "rt"), PID, ("reason", "max_attempts")))] == 1.0
    held.release()


def test_default_collector_finds_live_named_objects():
    b = seawall.CircuitBreaker(name="auto-found")
    b.force_open()
    reg = CollectorRegistry()
    reg.register(SeawallCollector())
    s = samples(reg)
    assert s[("seawall_circuit_breaker_state", (("name", "auto-found"), ("state", "forced_open")))] == 1.0


def _fail():
    raise OSError("down")


def test_a_shared_bulkheads_gauges_count_every_holder():
    import os
    import uuid

    region = f"pytest-prom-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        ours = seawall.Bulkhead(2, 2, shared=region)
        theirs = seawall.Bulkhead(2, 2, shared=region)  # as another worker would
        held = [theirs.try_acquire(), theirs.try_acquire()]
        ticket = theirs.enqueue()
        reg = CollectorRegistry()
        reg.register(SeawallCollector(ours))
        s = samples(reg)
        assert s[("seawall_bulkhead_active", (("name", region),))] == 2.0
        assert s[("seawall_bulkhead_queued", (("name", region),))] == 1.0
        assert s[("seawall_bulkhead_rejections_total", (("name", region), ("reason", "full")))] == 0.0
        ticket.cancel()
        for p in held:
            p.release()
        s = samples(reg)
        assert s[("seawall_bulkhead_active", (("name", region),))] == 0.0
    finally:
        seawall.Bulkhead.unlink_shared(region)


# -- one name, several live objects ---------------------------------------------


def test_two_breakers_with_one_name_are_one_set_of_series():
    a = seawall.CircuitBreaker(name="dup-payments")
    b = seawall.CircuitBreaker(name="dup-payments")  # a second instance of a client class
    for _ in range(2):
        a.call(lambda: 1)
    try:
        a.call(_fail)
    except OSError:
        pass
    b.call(lambda: 1)
    b.force_open()
    with pytest.raises(seawall.CircuitOpenError):
        b.call(lambda: 1)
    for reg_objects in ((a, b), ()):  # given explicitly, and found by name
        reg = CollectorRegistry()
        reg.register(SeawallCollector(*reg_objects))
        s = samples(reg)  # fails on a duplicate label set
        state = {st: s[("seawall_circuit_breaker_state", (("name", "dup-payments"), ("state", st)))]
                 for st in ("closed", "open", "half_open", "forced_open", "disabled")}
        # One breaker closed, one forced open.
        assert state == {"closed": 1.0, "open": 0.0, "half_open": 0.0, "forced_open": 1.0, "disabled": 0.0}
        # a: 2 successes + 1 failure; b: 1 success, then 1 call rejected.
        assert s[("seawall_circuit_breaker_calls_total", (("name", "dup-payments"), ("outcome", "success")))] == 3.0
        assert s[("seawall_circuit_breaker_calls_total", (("name", "dup-payments"), ("outcome", "failure")))] == 1.0
        assert s[("seawall_circuit_breaker_rejections_total", (("name", "dup-payments"),))] == 1.0


def test_bulkheads_and_retries_with_one_name_are_summed():
    p1, p2 = seawall.Bulkhead(2, 0, name="dup-pool"), seawall.Bulkhead(3, 0, name="dup-pool")
    held = [p1.try_acquire(), p1.try_acquire(), p2.try_acquire()]
    with pytest.raises(seawall.BulkheadFullError):
        p1.try_acquire()
    fast = seawall.Backoff(base=0.001, jitter="none")
    r1 = seawall.Retry(attempts=3, backoff=fast, name="dup-rt")
    r2 = seawall.Retry(attempts=2, backoff=fast, name="dup-rt")
    for r in (r1, r2):
        with pytest.raises(OSError):
            r(_fail)()
    reg = CollectorRegistry()
    reg.register(SeawallCollector(p1, p2, r1, r2, p1))  # p1 twice: still once
    s = samples(reg)
    assert s[("seawall_bulkhead_active", (("name", "dup-pool"),))] == 3.0  # 2 + 1
    assert s[("seawall_bulkhead_max_concurrent", (("name", "dup-pool"),))] == 5.0  # 2 + 3
    assert s[("seawall_bulkhead_rejections_total", (("name", "dup-pool"), ("reason", "full")))] == 1.0
    # r1: 2 retries then gives up; r2: 1 retry then gives up.
    assert s[("seawall_retries_allowed_total", (("name", "dup-rt"), PID))] == 3.0
    assert s[("seawall_retries_denied_total", (("name", "dup-rt"), PID, ("reason", "max_attempts")))] == 2.0
    for p in held:
        p.release()


def test_two_handles_of_one_shared_region_count_the_region_once():
    import os
    import uuid

    region = f"pytest-prom-dup-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        h1 = seawall.Bulkhead(2, 1, shared=region)
        h2 = seawall.Bulkhead(2, 1, shared=region)  # same name (the region's)
        held = [h1.try_acquire(), h2.try_acquire()]
        ticket = h2.enqueue()
        with pytest.raises(seawall.BulkheadFullError):
            h1.try_acquire()  # 2 held, queue of 1 full: h1's own rejection
        b1 = seawall.CircuitBreaker(shared=region)
        b2 = seawall.CircuitBreaker(shared=region)
        b1.call(lambda: 1)
        b2.call(lambda: 1)
        reg = CollectorRegistry()
        reg.register(SeawallCollector(h1, h2, b1, b2))
        s = samples(reg)
        # The region holds 2 permits and 1 waiter of at most 2: not 4, 2 and 4.
        assert s[("seawall_bulkhead_active", (("name", region),))] == 2.0
        assert s[("seawall_bulkhead_queued", (("name", region),))] == 1.0
        assert s[("seawall_bulkhead_max_concurrent", (("name", region),))] == 2.0
        assert s[("seawall_bulkhead_rejections_total", (("name", region), ("reason", "full")))] == 1.0
        # One shared breaker, closed, with the 2 successes of both handles.
        assert s[("seawall_circuit_breaker_state", (("name", region), ("state", "closed")))] == 1.0
        assert s[("seawall_circuit_breaker_calls_total", (("name", region), ("outcome", "success")))] == 2.0
        ticket.cancel()
        for p in held:
            p.release()
    finally:
        seawall.Bulkhead.unlink_shared(region)
        seawall.CircuitBreaker.unlink_shared(region)
