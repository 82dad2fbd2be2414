"""Retry: attempts, backoff, classification, Retry-After, deadlines, budget,
throttle, block forms, and cancellation safety."""

import asyncio
import datetime
import time

import pytest

import seawall
from seawall import Backoff, Retry, RetryBudget, RetryThrottle
from conftest import FakeClock

FAST = Backoff(base=0.001, multiplier=2.0, max=0.01, jitter="none")


class Flaky:
    def __init__(self, failures, exc=OSError):
        self.failures, self.calls, self.exc = failures, 0, exc
        self.raised = []

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls <= self.failures:
            e = self.exc(f"attempt {self.calls}")
            self.raised.append(e)
            raise e
        return ("ok", args, kwargs)


def test_retries_until_success_and_passes_arguments():
    f = Flaky(2)
    g = Retry(attempts=3, backoff=FAST)(f)
    assert g(1, k=2) == ("ok", (1,), {"k": 2})
    assert f.calls == 3


def test_gives_up_after_attempts_with_the_last_exception_unchanged():
    f = Flaky(10)
    r = Retry(attempts=4, backoff=FAST)
    with pytest.raises(OSError) as e:
        r(f)()
    assert f.calls == 4
    assert e.value is f.raised[-1]
    assert r.stats() == {"allowed": 3, "max_attempts": 1, "deadline": 0, "budget_exhausted": 0, "throttled": 0}


def test_backoff_delays_are_exponential_and_capped():
    seen = []
    r = Retry(attempts=6, backoff=Backoff(base=0.001, multiplier=3.0, max=0.02, jitter="none"),
              before_sleep=lambda s: seen.append((s.attempt, s.delay)))
    with pytest.raises(OSError):
        r(Flaky(10))()
    assert seen == [(1, 0.001), (2, 0.003), (3, 0.009), (4, 0.02), (5, 0.02)]


def test_retry_on_types_and_predicates():
    f = Flaky(5, exc=KeyError)
    with pytest.raises(KeyError):
        Retry(attempts=5, backoff=FAST, retry_on=OSError)(f)()
    assert f.calls == 1
    f = Flaky(2, exc=KeyError)
    assert Retry(attempts=5, backoff=FAST, retry_on=lambda e: isinstance(e, KeyError))(f)()[0] == "ok"
    assert f.calls == 3


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit, asyncio.CancelledError])
def test_callers_cancellation_is_never_retried(exc):
    f = Flaky(5, exc=exc)
    with pytest.raises(exc):
        Retry(attempts=5, backoff=FAST, retry_on=BaseException)(f)()
    assert f.calls == 1


class RateLimited(Exception):
    def __init__(self, retry_after):
        super().__init__("429")
        self.retry_after = retry_after


@pytest.mark.parametrize("value", [0.05, datetime.timedelta(milliseconds=50)])
def test_retry_after_attribute_raises_the_delay(value):
    seen = []
    f = Flaky(1, exc=lambda msg: RateLimited(value))
    Retry(attempts=2, backoff=FAST, before_sleep=lambda s: seen.append(s.delay))(f)()
    assert seen == [0.05]


# A Retry-After that cannot be waited out (endless, or past every clock this
# package sleeps on): the server's own exception, at once, never an
# OverflowError. 200 years is past the 2**62 ns (~146 years) horizon; a
# timedelta.max is 86 399 999 999 999.999 s, past 2**64 ns (~584 years).
ENDLESS = [float("inf"), 1e300, 10**400, 200 * 365 * 86400.0, datetime.timedelta.max]


@pytest.mark.parametrize("value", ENDLESS, ids=["inf", "1e300", "10**400", "200y", "timedelta.max"])
def test_endless_retry_after_gives_up_with_the_servers_exception(value):
    f = Flaky(5, exc=lambda msg: RateLimited(value))
    r = Retry(attempts=3, backoff=FAST)
    with pytest.raises(RateLimited) as e:
        r(f)()
    assert e.value is f.raised[0] and f.calls == 1
    assert r.stats() == {"allowed": 0, "max_attempts": 0, "deadline": 1, "budget_exhausted": 0, "throttled": 0}


@pytest.mark.parametrize("value", [float("inf"), 1e300])
def test_endless_retry_after_gives_up_in_async_and_block_forms(value):
    r = Retry(attempts=3, backoff=FAST, timeout=5.0)
    f = Flaky(5, exc=lambda msg: RateLimited(value))

    async def g():
        return f()

    with pytest.raises(RateLimited) as e:
        asyncio.run(r.call(g))
    assert e.value is f.raised[0] and f.calls == 1
    calls = 0
    with pytest.raises(RateLimited):
        for attempt in r:
            with attempt:
                calls += 1
                raise RateLimited(value)
    assert calls == 1 and r.stats()["deadline"] == 2


@pytest.mark.parametrize(
    "hint", [float("nan"), -5.0, 0, datetime.timedelta(seconds=-1), "soon", [1.0]],
)
def test_a_retry_after_that_is_no_wait_is_no_hint(hint):
    # Only the backoff applies: jitter "none", base 1 ms -> 0.001 s before retry 1.
    seen = []
    f = Flaky(1, exc=lambda msg: RateLimited(0.05))
    r = Retry(attempts=2, backoff=FAST, retry_after=lambda e: hint,
              before_sleep=lambda s: seen.append(s.delay))
    assert r(f)()[0] == "ok"
    assert seen == [0.001] and f.calls == 2


def test_huge_configured_durations_saturate_instead_of_overflowing():
    f = Flaky(2)
    r = Retry(attempts=3, backoff=FAST, timeout=1e300)
    assert r(f)()[0] == "ok" and f.calls == 3
    f = Flaky(2)

    async def g():
        return f()

    assert asyncio.run(r.call(g))[0] == "ok" and f.calls == 3
    # start 100 s; end saturates at 2**64 - 1 ns: (2**64 - 1) / 1e9 - 100 s left.
    clock = FakeClock(100.0)
    for total in (1e300, 10**400):
        d = seawall.Deadline(total, clock=clock)
        assert d.remaining() == pytest.approx(18446744073.709551615 - 100.0, rel=1e-15)
        assert d.allocate(1e300) == pytest.approx(18446744073.709551615 - 100.0, rel=1e-15)
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.Deadline(float("nan"))
    assert e.value.field == "total"


def test_never_sleeps_past_the_timeout():
    f = Flaky(5, exc=lambda msg: RateLimited(1.0))
    r = Retry(attempts=5, backoff=FAST, timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(RateLimited):
        r(f)()
    assert time.monotonic() - t0 < 0.2
    assert f.calls == 1 and r.stats()["deadline"] == 1


def test_never_sleeps_past_the_current_deadline():
    f = Flaky(5)
    r = Retry(attempts=5, backoff=Backoff(base=0.5, jitter="none"))
    with seawall.Deadline(0.2):
        with pytest.raises(OSError):
            r(f)()
    assert f.calls == 1 and r.stats()["deadline"] == 1


def test_budget_refuses_retries_it_cannot_cover():
    budget = RetryBudget(ttl=10.0, min_retries_per_sec=0, percent_can_retry=50.0)
    r = Retry(attempts=5, backoff=FAST, budget=budget)
    calls = []
    for _ in range(2):
        f = Flaky(10)
        with pytest.raises(OSError):
            r(f)()
        calls.append(f.calls)
    # Call 1 deposits 0.5 retry: none. Call 2 brings it to 1.0: one retry.
    assert calls == [1, 2]
    assert r.stats()["budget_exhausted"] == 2


def test_throttle_allows_four_retries_then_refuses():
    throttle = RetryThrottle(max_tokens=10, token_ratio=0.1)
    f = Flaky(100)
    with pytest.raises(OSError):
        Retry(attempts=100, backoff=FAST, throttle=throttle)(f)()
    # Tokens 10 → 9, 8, 7, 6 (each > 5: retried), then 5 (not > 5): refused.
    assert f.calls == 5
    assert throttle.tokens == 5.0


def test_budget_and_throttle_together_are_refused():
    with pytest.raises(seawall.SeawallConfigError):
        Retry(budget=RetryBudget(), throttle=RetryThrottle())


@pytest.mark.parametrize(
    "kwargs, field",
    [({"attempts": 0}, "attempts"), ({"timeout": -1.0}, "timeout"),
     ({"timeout": float("nan")}, "timeout"), ({"timeout": float("inf")}, "timeout")],
)
def test_invalid_retry_config(kwargs, field):
    with pytest.raises(seawall.SeawallConfigError) as e:
        Retry(**kwargs)
    assert e.value.field == field


@pytest.mark.parametrize(
    "kwargs, field",
    [({"base": -1.0}, "base"), ({"multiplier": 0.5}, "multiplier"), ({"base": 1.0, "max": 0.5}, "max"),
     ({"jitter": "wild"}, "jitter"), ({"jitter": "full", "jitter_factor": 0.1}, "jitter_factor")],
)
def test_invalid_backoff_config(kwargs, field):
    with pytest.raises(seawall.SeawallConfigError) as e:
        Backoff(**kwargs)
    assert e.value.field == field


def test_jittered_delays_stay_in_their_ranges():
    full = Backoff(base=1.0, multiplier=2.0, max=100.0, jitter="full")
    equal = Backoff(base=1.0, multiplier=2.0, max=100.0, jitter="equal")
    draws_full = [full.delay(3) for _ in range(200)]
    draws_equal = [equal.delay(3) for _ in range(200)]
    assert all(0.0 <= d <= 4.0 for d in draws_full) and len(set(draws_full)) > 1
    assert all(2.0 <= d <= 4.0 for d in draws_equal) and len(set(draws_equal)) > 1


def test_block_form():
    f = Flaky(2)
    r = Retry(attempts=5, backoff=FAST)
    for attempt in r:
        with attempt:
            result = f()
    assert result[0] == "ok" and f.calls == 3 and attempt.number == 3


def test_block_form_gives_up_with_the_last_exception():
    f = Flaky(10)
    with pytest.raises(OSError) as e:
        for attempt in Retry(attempts=2, backoff=FAST):
            with attempt:
                f()
    assert f.calls == 2 and e.value is f.raised[-1]


def test_async_retries_and_async_block_form():
    async def main():
        f = Flaky(2)

        @Retry(attempts=3, backoff=FAST)
        async def g():
            await asyncio.sleep(0)
            return f()

        assert (await g())[0] == "ok"
        h = Flaky(1)
        async for attempt in Retry(attempts=3, backoff=FAST):
            with attempt:
                h()
        return f.calls, h.calls

    assert asyncio.run(main()) == (3, 2)


def test_wait_for_times_out_at_the_callers_timeout_without_retrying():
    attempts = []
    r = Retry(attempts=5, backoff=FAST)

    @r
    async def slow():
        attempts.append(time.monotonic())
        await asyncio.sleep(1.0)

    async def main():
        t0 = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(slow(), 0.1)
        return time.monotonic() - t0

    elapsed = asyncio.run(main())
    assert 0.09 <= elapsed < 0.3, elapsed
    assert len(attempts) == 1 and r.stats()["allowed"] == 0


def test_task_cancel_is_not_swallowed():
    r = Retry(attempts=5, backoff=FAST, retry_on=BaseException)
    started = []

    @r
    async def slow():
        started.append(1)
        await asyncio.sleep(1.0)

    async def main():
        task = asyncio.ensure_future(slow())
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert started == [1]


def test_async_timeout_cancels_the_running_attempt():
    r = Retry(attempts=3, backoff=FAST, timeout=0.1)

    @r
    async def slow():
        await asyncio.sleep(1.0)

    async def main():
        t0 = time.monotonic()
        with pytest.raises(seawall.DeadlineExceededError):
            await slow()
        return time.monotonic() - t0

    assert asyncio.run(main()) < 0.3


def test_retry_refuses_generators():
    def gen():
        yield 1

    with pytest.raises(TypeError):
        Retry()(gen)
