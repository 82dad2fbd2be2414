"""The Prometheus collector exports exactly the counts the objects made."""

import pytest

prometheus_client = pytest.importorskip("prometheus_client")
from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

import seawall  # noqa: E402
from seawall.prometheus import SeawallCollector  # noqa: E402


def samples(registry):
    out = {}
    for fam in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
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
    assert s[("seawall_retries_allowed_total", (("name", "rt"),))] == 2.0
    assert s[("seawall_retries_denied_total", (("name", "rt"), ("reason", "max_attempts")))] == 1.0
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
