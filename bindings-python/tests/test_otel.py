"""The OpenTelemetry instruments report exactly the counts the objects made,
read back with the SDK's in-memory reader."""

import os
import pytest

pytest.importorskip("opentelemetry.sdk.metrics")
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402

import seawall  # noqa: E402
from seawall.otel import instrument  # noqa: E402


def _fail():
    raise OSError("down")


def points(reader):
    """{(metric name, sorted attributes): (value, unit, monotonic or None)}; a
    point reported twice fails."""
    out = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            assert sm.scope.name == "seawall"
            for m in sm.metrics:
                for p in m.data.data_points:
                    key = (m.name, tuple(sorted(p.attributes.items())))
                    assert key not in out, f"duplicate point {key}"
                    out[key] = (p.value, m.unit, getattr(m.data, "is_monotonic", None))
    return out


def value(ps, name, **attrs):
    key = (name, tuple(sorted({"seawall.name": attrs.pop("n"), **attrs}.items())))
    return ps[key][0]


def test_breaker_bulkhead_and_retry_counts():
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    # Four calls of a count window of 4, minimum 4, default threshold 50 %:
    # two successes, then two failures make 2/4 = 50 % and open it; the next
    # three calls are refused without running.
    b = seawall.CircuitBreaker(window=seawall.CountWindow(4), minimum_calls=4, name="pay")
    bh = seawall.Bulkhead(1, 0, name="pool")
    r = seawall.Retry(attempts=3, backoff=seawall.Backoff(base=0.001, jitter="none"), name="rt")
    instrument(provider, b, bh, r)

    for _ in range(2):
        b.call(lambda: 1)
    for _ in range(2):
        with pytest.raises(OSError):
            b.call(_fail)
    for _ in range(3):
        with pytest.raises(seawall.CircuitOpenError):
            b.call(lambda: 1)
    held = bh.acquire()
    for _ in range(3):
        with pytest.raises(seawall.BulkheadFullError):
            bh.try_acquire()
    # Three attempts that all fail: two retries, then one give-up at max_attempts.
    with pytest.raises(OSError):
        r(_fail)()

    ps = points(reader)
    assert value(ps, "seawall.circuit_breaker.state", n="pay", **{"seawall.circuit_breaker.state": "open"}) == 1
    assert value(ps, "seawall.circuit_breaker.state", n="pay", **{"seawall.circuit_breaker.state": "closed"}) == 0
    assert value(ps, "seawall.circuit_breaker.transitions", n="pay") == 1
    calls = {o: value(ps, "seawall.circuit_breaker.calls", n="pay", **{"seawall.outcome": o})
             for o in ("success", "failure", "ignored", "rejected")}
    assert calls == {"success": 2, "failure": 2, "ignored": 0, "rejected": 3}
    assert value(ps, "seawall.circuit_breaker.slow_calls", n="pay") == 0
    assert value(ps, "seawall.bulkhead.active", n="pool") == 1
    assert value(ps, "seawall.bulkhead.queued", n="pool") == 0
    assert value(ps, "seawall.bulkhead.limit", n="pool") == 1
    assert value(ps, "seawall.bulkhead.rejections", n="pool", **{"seawall.reason": "full"}) == 3
    assert value(ps, "seawall.bulkhead.rejections", n="pool", **{"seawall.reason": "shed"}) == 0
    # A retry's decisions are this process's: the point says which process.
    me = {"process.pid": os.getpid()}
    assert value(ps, "seawall.retry.retries", n="rt", **me) == 2
    assert value(ps, "seawall.retry.give_ups", n="rt", **{"seawall.reason": "max_attempts"}, **me) == 1
    assert value(ps, "seawall.retry.give_ups", n="rt", **{"seawall.reason": "budget_exhausted"}, **me) == 0

    # Units in UCUM braces; counters are monotonic sums, what is in use now is not.
    assert ps[("seawall.circuit_breaker.calls", (("seawall.name", "pay"), ("seawall.outcome", "success")))][1:] \
        == ("{call}", True)
    assert ps[("seawall.bulkhead.active", (("seawall.name", "pool"),))][1:] == ("{permit}", False)
    assert ps[("seawall.circuit_breaker.transitions", (("seawall.name", "pay"),))][1:] == ("{transition}", True)

    # The next collection sees the release: the instruments read live counters.
    held.release()
    assert value(points(reader), "seawall.bulkhead.active", n="pool") == 0
    provider.shutdown()


def test_objects_sharing_a_name_are_one_set_of_points():
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    a = seawall.Bulkhead(2, 0, name="db")
    b = seawall.Bulkhead(3, 0, name="db")
    instrument(provider, a, b)
    pa, pb = a.acquire(), b.acquire()
    ps = points(reader)
    assert value(ps, "seawall.bulkhead.active", n="db") == 2
    assert value(ps, "seawall.bulkhead.limit", n="db") == 5
    pa.release()
    pb.release()
    provider.shutdown()


def test_refuses_what_it_cannot_report():
    with pytest.raises(TypeError):
        instrument(MeterProvider(), object())
