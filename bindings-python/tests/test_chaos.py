"""The chaos policy (DESIGN §11): rules, seeded draws, where it sits in a
policy, cancellation and deadlines, rule files and the counters."""

import asyncio
import datetime
import json
import logging
import random
import threading
import time

import pytest

import seawall


@pytest.fixture(autouse=True)
def fresh_policies(monkeypatch):
    """Each test its own process-wide policies: ``seawall.chaos(name)`` is one
    policy per name, and these tests reuse names with counts of their own."""
    monkeypatch.setattr(seawall.chaos, "_by_name", {})


def ok():
    return "ok"


def outcomes(policy, n):
    """'fail' or 'ok' for n sync calls through ``policy``."""
    f = policy(ok)
    out = []
    for _ in range(n):
        try:
            f()
            out.append("ok")
        except seawall.ChaosError:
            out.append("fail")
    return out


def model(seed, n, p, fr):
    """The sequence DESIGN §11 gives for draws of random.Random(seed): the
    first draw says whether the rule applies, the second whether it fails."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        applies = rng.random() < p
        fails = rng.random() < fr if applies else False
        out.append("fail" if fails else "ok")
    return out


# -- rules ------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value",
    [
        ("enabled", 1),
        ("hang", "yes"),
        ("probability", True),
        ("probability", 1.5),
        ("probability", float("nan")),
        ("failure_rate", -0.1),
        ("failure_rate", False),
        ("latency", -1.0),
        ("latency", True),
        ("latency", float("inf")),
        ("latency", "1s"),
    ],
)
def test_a_bad_rule_is_a_config_error_naming_its_field(field, value):
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.chaos("inventory", **{field: value})
    assert e.value.field == field


def test_unknown_rule_and_latency_units():
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.chaos("inventory", {"latencySeconds": 1})
    assert e.value.field == "latencySeconds"
    assert seawall.chaos("a", latency=datetime.timedelta(milliseconds=250)).rules.latency == 0.25
    # The seed documents' camelCase milliseconds, for files shared with Node services.
    r = seawall.ChaosRules.from_mapping({"enabled": True, "latencyMs": 100, "failureRate": 0.5})
    assert (r.enabled, r.latency, r.failure_rate) == (True, 0.1, 0.5)
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.ChaosRules.from_mapping({"latency": 1, "latency_ms": 5}, where="inventory")
    assert e.value.field == "inventory.latency_ms"


def test_off_unless_enabled():
    c = seawall.chaos("inventory", failure_rate=1.0, latency=30.0, hang=True)
    assert outcomes(c, 5) == ["ok"] * 5
    m = c.metrics()
    assert (m["enabled"], m["calls"], m["applied"], m["failures"], m["latency"], m["hangs"]) == (False, 5, 0, 0, 0, 0)


# -- one policy per name ----------------------------------------------------


def test_one_policy_per_name_in_the_process():
    a = seawall.chaos("per-name", enabled=True, failure_rate=1.0)
    assert seawall.chaos("per-name") is a
    assert seawall.chaos.for_dependency("per-name") is a
    assert seawall.chaos.get("per-name") is a and seawall.chaos.get("per-name-none") is None
    assert seawall.chaos("per-name-other") is not a
    # Without rules or a seed, a later call changes nothing.
    assert (a.rules.enabled, a.rules.failure_rate) == (True, 1.0)
    assert outcomes(a, 2) == ["fail", "fail"]
    assert a.metrics()["calls"] == 2
    # With rules, they replace the policy's (fields left out take their defaults).
    assert seawall.chaos("per-name", enabled=True, latency=0.0) is a
    assert (a.rules.enabled, a.rules.failure_rate) == (True, 0.0)
    assert seawall.chaos("per-name", {"enabled": False}) is a and not a.enabled
    assert a.metrics()["calls"] == 2  # the same policy: its counts go on
    seawall.chaos.reset()


def test_a_later_seed_restarts_the_draws_and_a_bad_call_changes_nothing():
    rules = dict(enabled=True, probability=0.5, failure_rate=0.5)
    a = seawall.chaos("per-name-seed", seed=1, **rules)
    outcomes(a, 7)
    assert seawall.chaos("per-name-seed", seed=42) is a
    assert a.rules == seawall.ChaosRules(**rules)
    assert outcomes(a, 200) == model(42, 200, 0.5, 0.5)

    a.reseed(7)
    before = a.rules
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.chaos("per-name-seed", seed=3, failure_rate=2.0)
    assert e.value.field == "failure_rate"
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.chaos("per-name-seed", seed="x", enabled=False)
    assert e.value.field == "seed"
    # Neither call changed the rules or restarted the draws from its seed.
    assert a.rules == before
    assert outcomes(a, 200) == model(7, 200, 0.5, 0.5)
    seawall.chaos.reset()


# -- draws ------------------------------------------------------------------


def test_one_seed_gives_one_sequence_and_the_model_predicts_it():
    rules = dict(enabled=True, probability=0.5, failure_rate=0.5)
    a = outcomes(seawall.chaos("a", seed=42, **rules), 300)
    b = outcomes(seawall.chaos("b", seed=42, **rules), 300)
    assert a == b == model(42, 300, 0.5, 0.5)
    assert outcomes(seawall.chaos("c", seed=43, **rules), 300) != a
    c = seawall.chaos("d", seed=42, **rules)
    outcomes(c, 10)
    c.reseed(42)
    assert outcomes(c, 300) == a


def test_rates_over_many_draws_stay_within_binomial_bounds():
    # 4000 calls, p = 0.5, f = 0.4: applied ~ B(4000, 0.5) (mean 2000, sd 31.6),
    # failures ~ B(4000, 0.2) (mean 800, sd 25.3); bounds are 5 sd.
    c = seawall.chaos("inventory", enabled=True, probability=0.5, failure_rate=0.4)
    fails = outcomes(c, 4000).count("fail")
    m = c.metrics()
    assert abs(m["applied"] - 2000) <= 158
    assert abs(fails - 800) <= 127
    assert m["failures"] == fails and m["calls"] == 4000


def test_probability_and_rate_at_their_ends():
    assert outcomes(seawall.chaos("x", enabled=True, failure_rate=1.0), 50) == ["fail"] * 50
    assert outcomes(seawall.chaos("x", enabled=True, probability=0.0, failure_rate=1.0), 50) == ["ok"] * 50
    assert outcomes(seawall.chaos("x", enabled=True, failure_rate=0.0), 50) == ["ok"] * 50


# -- composition ------------------------------------------------------------


def test_breaker_outside_sees_injected_failures_and_opens():
    # Count window 4, minimum 4, threshold 50 %: four injected failures open it;
    # the fifth call is refused before it reaches the chaos policy.
    c = seawall.chaos("inventory", enabled=True, failure_rate=1.0)
    b = seawall.CircuitBreaker(window=seawall.CountWindow(4), minimum_calls=4)
    f = seawall.wrap(c, b)(ok)
    for _ in range(4):
        with pytest.raises(seawall.ChaosError):
            f()
    with pytest.raises(seawall.CircuitOpenError):
        f()
    assert b.state == "open"
    assert c.metrics()["calls"] == 4


def test_every_retry_attempt_draws_again():
    c = seawall.chaos("inventory", enabled=True, failure_rate=1.0)
    r = seawall.Retry(attempts=3, backoff=seawall.Backoff(base=0, jitter="none"))
    with pytest.raises(seawall.ChaosError):
        seawall.wrap(r, c)(ok)()
    assert c.metrics()["failures"] == 3

    async def aok():
        return "ok"

    c2 = seawall.Chaos("inventory", enabled=True, failure_rate=1.0)  # a second, outside the registry
    with pytest.raises(seawall.ChaosError):
        asyncio.run(seawall.wrap(c2, r)(aok)())
    assert c2.metrics()["failures"] == 3


def test_fallback_serves_stale_data_while_failing_and_recovers():
    c = seawall.chaos("inventory")
    pol = seawall.wrap(seawall.fallback(seawall.StaleCache()), c)
    stock = {"n": 1}

    def lookup(item):
        return (item, stock["n"])

    assert pol.execute(lookup, "sku").source == "primary"
    c.set(enabled=True, failure_rate=1.0)
    stock["n"] = 2
    res = pol.execute(lookup, "sku")
    assert (res.value, res.source, res.degraded) == (("sku", 1), "stale-cache", True)
    assert isinstance(res.error, seawall.ChaosError) and res.error.code == "ECHAOS"
    c.set()
    assert pol.execute(lookup, "sku").value == ("sku", 2)


def test_wrap_takes_one_chaos_layer():
    with pytest.raises(TypeError):
        seawall.wrap(seawall.chaos("a"), seawall.chaos("b"))
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.Policy(chaos=seawall.Retry())
    assert e.value.field == "chaos"


# -- waits ------------------------------------------------------------------


def test_async_timeout_cuts_an_injected_latency():
    c = seawall.chaos("inventory", enabled=True, latency=30.0)

    async def aok():
        return "ok"

    t0 = time.monotonic()
    with pytest.raises(seawall.DeadlineExceededError):
        asyncio.run(seawall.wrap(c, 0.05)(aok)())
    assert time.monotonic() - t0 < 10  # far below the 30 s injected
    assert c.metrics()["latency"] == 1


def test_cancelling_the_task_ends_a_hang_at_once():
    c = seawall.chaos("inventory", enabled=True, hang=True)
    ran = []

    @c
    async def call():
        ran.append(1)

    async def main():
        task = asyncio.create_task(call())
        while c.metrics()["hangs"] == 0:
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(main(), 10))
    assert ran == []


def test_sync_latency_and_hang_end_at_the_current_deadline():
    lat = seawall.chaos("inventory", enabled=True, latency=30.0)
    hang = seawall.chaos("inventory", enabled=True, hang=True)
    for c in (lat, hang):
        t0 = time.monotonic()
        with seawall.Deadline(0.05), pytest.raises(seawall.DeadlineExceededError):
            c(ok)()
        assert time.monotonic() - t0 < 10
    # Shorter than the deadline: the latency is waited and the call made.
    short = seawall.chaos("inventory", enabled=True, latency=0.01)
    with seawall.Deadline(30):
        assert short(ok)() == "ok"


def test_sync_timeout_of_a_policy_bounds_the_hang():
    c = seawall.chaos("inventory", enabled=True, hang=True)
    b = seawall.CircuitBreaker(window=seawall.CountWindow(2), minimum_calls=2)
    f = seawall.wrap(b, c, 0.02)(ok)
    for _ in range(2):
        with pytest.raises(seawall.DeadlineExceededError):
            f()
    assert b.state == "open"


# -- rule files -------------------------------------------------------------


def write(path, obj):
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))


def test_a_file_sets_the_process_wide_rules_and_a_bad_one_keeps_them(tmp_path, caplog):
    path = tmp_path / "rules.json"
    write(path, {"inv-file": {"enabled": True, "failure_rate": 1.0}, "pay-file": {"enabled": True, "latency": 0.1}})
    errors = []
    f = seawall.chaos.load(path, poll_interval=None, on_error=lambda p, e: errors.append((p, e)))
    try:
        inv = seawall.chaos.for_dependency("inv-file")
        assert seawall.chaos.for_dependency("inv-file") is inv
        assert outcomes(inv, 3) == ["fail"] * 3
        assert seawall.chaos.for_dependency("pay-file").rules.latency == 0.1

        write(path, {"inv-file": {"enabled": True, "failure_rate": 2}})
        with caplog.at_level(logging.WARNING, logger="seawall"):
            assert f.reload() is False
        assert inv.rules.failure_rate == 1.0
        assert isinstance(f.error, seawall.SeawallConfigError) and f.error.field == "inv-file.failure_rate"
        assert errors == [(str(path), f.error)]
        assert any("inv-file.failure_rate" in r.getMessage() for r in caplog.records)

        write(path, "{not json")
        assert f.reload() is False and inv.rules.failure_rate == 1.0

        # pay-file is no longer named: it is turned off.
        write(path, {"inv-file": {"enabled": True, "failure_rate": 0.0}})
        assert f.reload() is True and f.error is None
        assert outcomes(inv, 3) == ["ok"] * 3
        assert not seawall.chaos.for_dependency("pay-file").enabled

        # Deleting the file is a bad file too (DESIGN §11): the previous rules
        # stay, and the reason is reported as for any bad file.
        write(path, {"inv-file": {"enabled": True, "failure_rate": 1.0}})
        assert f.reload() is True
        errors.clear()
        path.unlink()
        with caplog.at_level(logging.WARNING, logger="seawall"):
            assert f.reload() is False
        assert isinstance(f.error, FileNotFoundError)
        assert errors == [(str(path), f.error)]
        assert outcomes(inv, 3) == ["fail"] * 3
        assert any("kept its previous rules" in r.getMessage() for r in caplog.records)

        # The game day ends when the rules say so.
        write(path, {"inv-file": {"enabled": False}})
        assert f.reload() is True and f.error is None
        assert outcomes(inv, 3) == ["ok"] * 3
    finally:
        f.close()
        seawall.chaos.reset()


def test_a_file_naming_an_empty_dependency_is_a_bad_file_that_changes_nothing(tmp_path):
    # JSON allows "" as a key, a dependency name does not: the whole file is
    # bad, before any of its rules are set (not half applied, then raised).
    path = tmp_path / "rules.json"
    write(path, {"inv-empty": {"enabled": True, "failure_rate": 1.0}})
    f = seawall.chaos.load(path, poll_interval=None)
    try:
        write(path, {"inv-empty": {"enabled": False}, "": {"enabled": True}})
        assert f.reload() is False
        assert isinstance(f.error, seawall.SeawallConfigError) and f.error.field == "rules"
        assert seawall.chaos.for_dependency("inv-empty").rules.failure_rate == 1.0
        assert seawall.chaos.for_dependency("inv-empty").enabled
    finally:
        f.close()
        seawall.chaos.reset()
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.chaos.load(path, poll_interval=None)
    assert e.value.field == "rules"


def test_a_bad_file_at_the_first_load_raises(tmp_path):
    path = tmp_path / "rules.json"
    write(path, {"inventory": {"enabled": "true"}})
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.chaos.load(path, poll_interval=None)
    assert e.value.field == "inventory.enabled"
    write(path, [1, 2])
    with pytest.raises(seawall.SeawallConfigError):
        seawall.chaos.load(path, poll_interval=None)


def wait_until(cond, seconds=10.0):
    end = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.005)
    return True


def test_the_watcher_rereads_a_changed_file(tmp_path):
    path = tmp_path / "rules.json"
    write(path, {"inv-watch": {"enabled": False}})
    fields = []  # a file caught empty mid-write (truncated, not yet written) reports "rules" first
    with seawall.chaos.load(path, poll_interval=0.01, on_error=lambda p, e: fields.append(e.field)) as f:
        inv = seawall.chaos.for_dependency("inv-watch")
        assert not inv.enabled
        write(path, {"inv-watch": {"enabled": True, "latencyMs": 100}})
        assert wait_until(lambda: inv.enabled)
        assert inv.rules.latency == 0.1
        write(path, {"inv-watch": {"enabled": True, "latency": "slow"}})
        assert wait_until(lambda: "inv-watch.latency" in fields)
        assert set(fields) <= {"rules", "inv-watch.latency"}
        assert inv.enabled and inv.rules.latency == 0.1
        assert f.error is not None and f.error.field == "inv-watch.latency"
    seawall.chaos.reset()
    assert not inv.enabled


def test_the_watcher_keeps_the_rules_of_a_deleted_file_and_reads_it_again(tmp_path):
    path = tmp_path / "rules.json"
    write(path, {"inv-gone": {"enabled": True, "failure_rate": 1.0}})
    seen = []
    reported = threading.Event()

    def on_error(p, e):
        seen.append(e)
        reported.set()

    with seawall.chaos.load(path, poll_interval=0.01, on_error=on_error) as f:
        inv = seawall.chaos.for_dependency("inv-gone")
        path.unlink()
        assert reported.wait(10)
        assert isinstance(seen[0], FileNotFoundError)
        assert inv.rules.enabled and inv.rules.failure_rate == 1.0
        time.sleep(0.1)  # ten more polls of the same missing file: reported once
        assert len(seen) == 1
        write(path, {"inv-gone": {"enabled": True, "failure_rate": 0.0}})
        assert wait_until(lambda: inv.rules.failure_rate == 0.0)
        assert f.error is None
    seawall.chaos.reset()


def test_a_file_missing_at_the_first_load_holds_no_rules_until_it_appears(tmp_path):
    path = tmp_path / "later.json"
    f = seawall.chaos.load(path, poll_interval=None)
    assert f.error is None
    write(path, {"inv-later": {"enabled": True}})
    assert f.reload() is True
    assert seawall.chaos.for_dependency("inv-later").enabled
    f.close()
    seawall.chaos.reset()


def test_a_listener_that_raises_changes_nothing(tmp_path, caplog):
    path = tmp_path / "rules.json"
    write(path, {"inv-l": {"enabled": True}})

    def boom(p, e):
        raise RuntimeError("listener")

    f = seawall.chaos.load(path, poll_interval=None, on_error=boom)
    write(path, "[")
    with caplog.at_level(logging.WARNING, logger="seawall"):
        assert f.reload() is False
    assert seawall.chaos.for_dependency("inv-l").enabled
    assert any(r.levelno == logging.ERROR for r in caplog.records)
    seawall.chaos.reset()


# -- counters in the exporters ----------------------------------------------


def test_prometheus_and_otel_export_the_counts():
    prometheus_client = pytest.importorskip("prometheus_client")
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families
    from seawall.prometheus import SeawallCollector

    # Two policies of one name (built outside the registry) export as one.
    c = seawall.Chaos("inv-export", enabled=True, latency=0.001, failure_rate=1.0)
    h = seawall.Chaos("inv-export", enabled=True, probability=0.0)
    outcomes(c, 3)
    outcomes(h, 2)
    reg = CollectorRegistry()
    reg.register(SeawallCollector(c, h))
    got = {}
    for fam in text_string_to_metric_families(generate_latest(reg).decode()):
        for s in fam.samples:
            if s.name.startswith("seawall_chaos"):
                got[(s.name, s.labels.get("fault"))] = s.value
    assert got == {
        ("seawall_chaos_calls_total", None): 5.0,
        ("seawall_chaos_injected_total", "latency"): 3.0,
        ("seawall_chaos_injected_total", "hang"): 0.0,
        ("seawall_chaos_injected_total", "failure"): 3.0,
    }

    pytest.importorskip("opentelemetry.sdk.metrics")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from seawall.otel import instrument

    reader = InMemoryMetricReader()
    instrument(MeterProvider(metric_readers=[reader]), c, h)
    points = {}
    for rm in reader.get_metrics_data().resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                for p in m.data.data_points:
                    if m.name.startswith("seawall.chaos"):
                        points[(m.name, p.attributes.get("seawall.fault"))] = p.value
    assert points == {
        ("seawall.chaos.calls", None): 5,
        ("seawall.chaos.injections", "latency"): 3,
        ("seawall.chaos.injections", "hang"): 0,
        ("seawall.chaos.injections", "failure"): 3,
    }
