"""CircuitBreaker: configuration, the DESIGN §3 oracles, every call form,
classification, listeners, manual control and permits."""

import asyncio
import gc
import logging
import sys

import pytest

import seawall
from seawall import CircuitBreaker, CircuitOpenError, CountWindow, State, TimeWindow
from conftest import FakeClock


def count_breaker(clock=None, **kw):
    kw.setdefault("window", CountWindow(10))
    kw.setdefault("minimum_calls", 10)
    kw.setdefault("open_duration", 30.0)
    return CircuitBreaker(clock=clock or FakeClock(), **kw)


def boom():
    raise ValueError("boom")


def run(b, outcomes):
    """Call through the decorator: 'S' succeeds, 'F' raises ValueError."""

    @b
    def call(ok):
        if not ok:
            raise ValueError("down")
        return "up"

    for o in outcomes:
        try:
            call(o == "S")
        except ValueError:
            pass


# -- configuration -----------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"minimum_calls": 0}, "minimum_calls"),
        ({"failure_rate_threshold": 150}, "failure_rate_threshold"),
        ({"failure_rate_threshold": -1}, "failure_rate_threshold"),
        ({"slow_call_rate_threshold": float("nan")}, "slow_call_rate_threshold"),
        ({"window": CountWindow(0)}, "window.size"),
        ({"window": CountWindow(1025)}, "window.size"),
        ({"window": TimeWindow(10.0, buckets=0)}, "window.buckets"),
        ({"window": TimeWindow(10.0, buckets=129)}, "window.buckets"),
        ({"open_duration": -1.0}, "open_duration"),
        ({"open_duration": 0.0}, "open_duration"),
        ({"open_duration": float("inf")}, "open_duration"),
        ({"open_duration": 60.0, "max_open_duration": 30.0}, "max_open_duration"),
        ({"open_backoff_multiplier": 0.5}, "open_backoff_multiplier"),
        ({"open_jitter_factor": 1.5}, "open_jitter_factor"),
        ({"half_open_max_calls": 0}, "half_open_max_calls"),
        ({"half_open_max_calls": 5000}, "half_open_max_calls"),
        ({"half_open_success_threshold": 0}, "half_open_success_threshold"),
        ({"half_open_max_wait": 0.0}, "half_open_max_wait"),
        ({"consecutive_failures": 0}, "consecutive_failures"),
        ({"slow_call_duration": -0.5}, "slow_call_duration"),
    ],
)
def test_invalid_config_names_the_field(kwargs, field):
    with pytest.raises(seawall.SeawallConfigError) as e:
        CircuitBreaker(**kwargs)
    assert e.value.field == field
    assert field in str(e.value)
    assert isinstance(e.value, ValueError)


def test_wrong_types_are_config_errors_naming_the_field():
    for kwargs, field in (({"window": 100}, "window"), ({"record_on": "ValueError"}, "record_on"),
                          ({"minimum_calls": "10"}, "minimum_calls")):
        with pytest.raises(seawall.SeawallConfigError) as e:
            CircuitBreaker(**kwargs)  # type: ignore[arg-type]
        assert e.value.field == field


def test_defaults_follow_design():
    b = CircuitBreaker()
    assert b.state is State.CLOSED
    assert b.window == TimeWindow(10.0, buckets=10)
    m = b.metrics()
    assert m["state"] == "closed" and m["window"]["calls"] == 0 and m["openings"] == 0


# -- DESIGN §3.1 oracles -----------------------------------------------------


def test_five_failures_five_successes_open_on_the_tenth_call():
    b = count_breaker()
    run(b, "FSFSFSFSF")
    assert b.state == "closed"  # 9 calls: no decision yet
    run(b, "S")
    assert b.state == "open"


def test_four_failures_six_successes_stay_closed():
    b = count_breaker()
    run(b, "FSFSFSFSSS")
    assert b.state == "closed"
    assert b.metrics()["window"] == {"calls": 10, "failures": 4, "slow_calls": 0, "slow_failures": 0}
    assert b.metrics()["failure_rate"] == 40.0


def test_nine_failures_of_nine_calls_decide_nothing():
    b = count_breaker()
    run(b, "F" * 9)
    assert b.state == "closed"


def test_consecutive_failures_rule():
    b = count_breaker(consecutive_failures=3, failure_rate_threshold=None)
    run(b, "FFSFF")
    assert b.state == "closed"
    run(b, "F")
    assert b.state == "open"


def test_retry_after_counts_down_and_open_moves_to_half_open():
    clock = FakeClock()
    b = count_breaker(clock, window=CountWindow(2), minimum_calls=2, open_duration=30.0)
    run(b, "FF")
    clock.advance(12.0)
    with pytest.raises(CircuitOpenError) as e:
        b.call(lambda: 1)
    assert e.value.retry_after == pytest.approx(18.0, abs=1e-9)
    assert e.value.state == "open"
    clock.advance(18.0)
    assert b.state == "open"  # reading never moves it
    assert b.call(lambda: 7) == 7  # the probe
    assert b.state == "closed"


def test_slow_calls_open_with_the_slow_rule():
    clock = FakeClock()
    b = count_breaker(clock, window=CountWindow(4), minimum_calls=4, slow_call_duration=1.0,
                      slow_call_rate_threshold=50.0, failure_rate_threshold=None)

    @b
    def call(seconds):
        clock.advance(seconds)
        return seconds

    call(0.5), call(1.0), call(1.5)  # 1.0 is not slow: slow is strictly greater
    assert b.state == "closed"
    call(2.0)
    assert b.state == "open"
    assert b.metrics()["totals"]["slow"] == 2


# -- forms -------------------------------------------------------------------


def test_sync_decorator_keeps_metadata_and_binds_methods():
    b = count_breaker()

    @b
    def f(x, *, y=1):
        """Docs."""
        return x + y

    assert f(1, y=2) == 3
    assert f.__name__ == "f" and f.__doc__ == "Docs." and f.__wrapped__.__name__ == "f"

    class C:
        k = 10

        @b
        def m(self, x):
            return self.k + x

    assert C().m(5) == 15
    assert b.metrics()["totals"]["successes"] == 2


def test_user_exception_propagates_unchanged():
    b = count_breaker()
    err = ValueError("mine")

    @b
    def f():
        raise err

    with pytest.raises(ValueError) as e:
        f()
    assert e.value is err
    assert b.metrics()["totals"]["failures"] == 1


def test_async_decorator_and_async_with():
    b = count_breaker()

    @b
    async def f(x):
        await asyncio.sleep(0)
        if x < 0:
            raise KeyError(x)
        return x * 2

    async def main():
        assert await f(2) == 4
        with pytest.raises(KeyError):
            await f(-1)
        async with b:
            pass
        with pytest.raises(OSError):
            async with b:
                raise OSError()
        assert await b.call(f, 3) == 6

    asyncio.run(main())
    t = b.metrics()["totals"]
    # f(2), the empty block, and b.call(f, 3) twice (call, then f's own decorator).
    assert (t["successes"], t["failures"]) == (4, 2)
    assert f.__name__ == "f"


def test_generator_decorator_records_when_the_generator_ends():
    b = count_breaker()

    @b
    def gen(n, fail=False):
        for i in range(n):
            yield i
        if fail:
            raise RuntimeError("late")
        return "done"

    assert list(gen(3)) == [0, 1, 2]
    with pytest.raises(RuntimeError):
        list(gen(2, fail=True))
    g = gen(5)
    next(g)
    g.close()  # GeneratorExit: ignored
    t = b.metrics()["totals"]
    assert (t["successes"], t["failures"], t["ignored"]) == (1, 1, 1)


def test_async_generator_decorator():
    b = count_breaker()

    @b
    async def agen(n):
        for i in range(n):
            yield i

    async def main():
        return [x async for x in agen(3)]

    assert asyncio.run(main()) == [0, 1, 2]
    assert b.metrics()["totals"]["successes"] == 1


def test_with_block_and_call():
    b = count_breaker()
    with b:
        pass
    with pytest.raises(ZeroDivisionError):
        with b:
            1 / 0
    assert b.call(lambda a, k=0: a + k, 1, k=2) == 3
    t = b.metrics()["totals"]
    assert (t["successes"], t["failures"]) == (2, 1)


def test_open_breaker_rejects_every_form():
    b = count_breaker(window=CountWindow(1), minimum_calls=1)
    run(b, "F")
    with pytest.raises(CircuitOpenError):
        with b:
            pass
    with pytest.raises(CircuitOpenError):
        b.call(lambda: 1)

    async def main():
        async with b:
            pass

    with pytest.raises(CircuitOpenError):
        asyncio.run(main())
    assert b.metrics()["totals"]["rejected"] == 3


# -- classification ----------------------------------------------------------


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit, GeneratorExit, asyncio.CancelledError])
def test_callers_own_cancellation_is_ignored_and_reraised(exc):
    b = count_breaker()
    err = exc()

    @b
    def f():
        raise err

    with pytest.raises(exc) as e:
        f()
    assert e.value is err
    m = b.metrics()
    assert m["totals"]["ignored"] == 1 and m["window"]["calls"] == 0


def test_cancelled_async_call_is_ignored():
    b = count_breaker()

    @b
    async def slow():
        await asyncio.sleep(5)

    async def main():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(slow(), 0.05)

    asyncio.run(main())
    assert b.metrics()["totals"]["ignored"] == 1
    assert b.metrics()["window"]["calls"] == 0


def test_record_on_and_ignore_on_types_and_predicates():
    class Timeout_(Exception):
        pass

    b = count_breaker(record_on=(OSError, Timeout_), ignore_on=lambda e: "ignore" in str(e))
    for exc in (OSError("x"), Timeout_("t"), KeyError("k"), OSError("ignore me")):
        with pytest.raises(type(exc)):
            b.call(_raiser(exc))
    t = b.metrics()["totals"]
    # KeyError is not recorded: it counts as a success (resilience4j).
    assert (t["failures"], t["successes"], t["ignored"]) == (2, 1, 1)
    assert b._native.classify(KeyboardInterrupt()) == "ignored"


def _raiser(exc):
    def f():
        raise exc

    return f


def test_a_broken_predicate_counts_a_failure_and_keeps_the_users_error(monkeypatch):
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u.exc_value))

    def broken(e):
        raise RuntimeError("predicate bug")

    b = count_breaker(record_on=broken)
    err = ValueError("user")
    with pytest.raises(ValueError) as e:
        b.call(_raiser(err))
    assert e.value is err
    assert b.metrics()["totals"]["failures"] == 1
    assert [str(x) for x in reported] == ["predicate bug"]


# -- listeners, manual control, permits --------------------------------------


def test_listeners_see_every_transition():
    clock = FakeClock()
    seen = []
    b = count_breaker(clock, window=CountWindow(2), minimum_calls=2, open_duration=5.0,
                      listeners=[lambda br, old, new: seen.append((br.name, old, new))], name="l")
    run(b, "FF")
    clock.advance(5.0)
    run(b, "S")
    assert seen == [("l", State.CLOSED, State.OPEN), ("l", State.OPEN, State.HALF_OPEN),
                    ("l", State.HALF_OPEN, State.CLOSED)]
    b.force_open()
    b.reset()
    assert seen[-2:] == [("l", State.CLOSED, State.FORCED_OPEN), ("l", State.FORCED_OPEN, State.CLOSED)]


def test_a_failing_listener_is_logged_not_raised(caplog):
    def bad(br, old, new):
        raise RuntimeError("listener bug")

    b = count_breaker(window=CountWindow(1), minimum_calls=1, listeners=[bad])
    with caplog.at_level(logging.ERROR, logger="seawall"):
        run(b, "F")
    assert b.state == "open"
    assert "listener" in caplog.text and "listener bug" in caplog.text


def test_force_open_disable_reset():
    b = count_breaker()
    b.force_open()
    with pytest.raises(CircuitOpenError) as e:
        b.call(lambda: 1)
    assert e.value.state == "forced_open" and e.value.retry_after is None
    b.disable()
    run(b, "F" * 20)
    assert b.state == "disabled" and b.metrics()["totals"]["failures"] == 20
    b.reset()
    assert b.state == "closed" and b.metrics()["window"]["calls"] == 0


def test_permits_record_once_and_dropped_ones_count_ignored():
    b = count_breaker()
    p = b.acquire()
    p.success()
    with pytest.raises(seawall.PermitAlreadyUsedError):
        p.failure()
    b.acquire()  # dropped at once
    gc.collect()
    t = b.metrics()["totals"]
    assert (t["admitted"], t["successes"], t["failures"], t["ignored"]) == (2, 1, 0, 1)


def test_half_open_admits_half_open_max_calls_probes():
    clock = FakeClock()
    b = count_breaker(clock, window=CountWindow(1), minimum_calls=1, open_duration=1.0,
                      half_open_max_calls=2, half_open_success_threshold=2)
    run(b, "F")
    clock.advance(1.0)
    p1, p2 = b.acquire(), b.acquire()
    with pytest.raises(CircuitOpenError) as e:
        b.acquire()
    assert e.value.state == "half_open" and e.value.retry_after is None
    p1.success()
    assert b.state == "half_open"
    p2.success()
    assert b.state == "closed"


def test_stale_permit_from_before_a_reset_decides_nothing():
    b = count_breaker(window=CountWindow(1), minimum_calls=1)
    p = b.acquire()
    b.reset()
    p.failure()
    assert b.state == "closed"
    assert b.metrics()["totals"]["stale"] == 1


def test_an_object_with_an_async_call_records_how_its_coroutine_ended():
    b = seawall.CircuitBreaker(window=seawall.CountWindow(4), minimum_calls=2, failure_rate_threshold=50)

    class Client:
        async def __call__(self, ok):
            await asyncio.sleep(0)
            if not ok:
                raise ConnectionError("down")
            return "up"

    call = b(Client())

    async def main():
        assert await call(True) == "up"
        with pytest.raises(ConnectionError):
            await call(False)

    asyncio.run(main())
    # 1 success + 1 failure = 50 % of 2 calls: open (recorded when each
    # coroutine ended, not when it was made).
    assert b.state == "open"
    assert b.metrics()["totals"]["failures"] == 1


def test_the_health_of_a_breaker_open_past_its_open_period_is_degraded_not_unhealthy():
    # Opened at t for 30 s: unhealthy (503) until then; after it, the next
    # call would probe, so the health report says half-open (degraded, 200)
    # without waiting for that call (a load balancer routing on /health would
    # otherwise keep the instance out of rotation for good).
    clock = FakeClock()
    b = count_breaker(clock, window=CountWindow(2), minimum_calls=2, open_duration=30.0, name="db")
    for _ in range(2):
        with pytest.raises(ValueError):
            b.call(boom)
    report = seawall.HealthReport({"db": b})
    assert report.answer()[0] == 503
    clock.advance(29.999)
    assert report.check()["dependencies"]["db"]["breakers"] == {"db": "open"}
    assert report.answer()[0] == 503
    clock.advance(0.001)
    doc = report.check()
    assert (doc["status"], doc["dependencies"]["db"]["breakers"]) == ("degraded", {"db": "half_open"})
    assert report.answer()[0] == 200
    assert b.state == State.OPEN, "the report changes nothing"
