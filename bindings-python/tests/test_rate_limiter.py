"""seawall.RateLimiter against hand-worked GCRA figures (DESIGN §10): with
``rate`` cells per ``per`` seconds and ``burst``, T = per / rate and
tau = T * (burst - 1); n cells at now are admitted iff
max(TAT, now) + n*T - T - now <= tau, else the wait is that excess minus tau.
Fake clocks make every figure exact; the waits, decorators, context managers,
keyed form, sharing, composition with Retry and CircuitBreaker, and the
Prometheus counters are checked on top."""

import asyncio
import os
import subprocess
import sys
import textwrap

import pytest

import seawall
from seawall._rate_limiter import key_word


class Clock:
    """Fake monotonic seconds; ``sleep`` advances it and records each sleep."""

    def __init__(self, t=0.0):
        self.t = t
        self.slept = []

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.slept.append(s)
        self.t += s

    async def async_sleep(self, s):
        self.sleep(s)


def ns(seconds):
    return round(seconds * 1e9)


def ten_per_second(clock, **kw):
    # T = 100 ms, tau = 200 ms.
    return seawall.RateLimiter(10, per=1.0, burst=3, clock=clock, **kw)


def test_burst_then_one_cell_every_emission_interval():
    c = Clock()
    rl = ten_per_second(c)
    assert [rl.try_acquire() for _ in range(4)] == [True, True, True, False]
    # TAT = 300 ms: next 400, 400 - 100 - 0 = 300 > 200: wait 100 ms.
    assert ns(rl.take()) == 100_000_000
    c.t = 0.030  # 400 - 100 - 30 = 270: wait 70 ms
    assert ns(rl.take()) == 70_000_000
    c.t = 0.100  # 400 - 100 - 100 = 200 <= 200: admitted, TAT 400 ms
    assert rl.take() is None
    assert ns(rl.take()) == 100_000_000
    c.t = 10.0  # idle: the whole burst is back
    assert rl.try_acquire(3)
    assert not rl.try_acquire()
    # Admitted: 3 single cells, the take at 100 ms, and 3 cells at once.
    assert rl.stats() == {"admitted": 5, "rejected": 5, "cells": 7}


def test_n_cells_are_all_or_none():
    c = Clock()
    # 5 per second, burst 4: T = 200 ms, tau = 600 ms.
    rl = seawall.RateLimiter(5, per=1.0, burst=4, clock=c)
    assert rl.try_acquire(3)  # next 600, 600 - 200 = 400 <= 600
    assert ns(rl.take(2)) == 200_000_000  # next 1000: 800 - 600
    assert rl.try_acquire(1)  # nothing was taken by the refusal
    assert not rl.try_acquire(1)


def test_burst_defaults_to_rate_and_properties():
    rl = seawall.RateLimiter(100)
    assert (rl.rate, rl.per, rl.burst, rl.keyed, rl.shared, rl.created) == (100, 1.0, 100, False, False, True)
    assert seawall.RateLimiter(5, per=60).burst == 5


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"rate": 0}, "rate"),
        ({"rate": -1}, "rate"),
        ({"rate": 10, "per": 0}, "per"),
        ({"rate": 10, "per": -1.0}, "per"),
        ({"rate": 10, "burst": 0}, "burst"),
        ({"rate": 10, "burst": 2**32}, "burst"),
        ({"rate": 2000, "per": 1e-6}, "rate"),  # T = 1000 ns / 2000 < 1 ns
        ({"rate": 10, "max_wait": -1}, "max_wait"),
        ({"rate": 2**70}, "rate"),
    ],
)
def test_invalid_configs_name_the_argument(kw, field):
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.RateLimiter(**kw)
    assert e.value.field == field


def test_cells_outside_one_to_burst_are_config_errors():
    rl = ten_per_second(Clock())
    for n, message in [(0, "invalid n: must not be zero"), (4, "invalid n: must be between 1 and 3"),
                       (2**70, "invalid n: must be between 1 and 3"), (-5, "invalid n: must be between 1 and 3, got -5"),
                       (-2**70, f"invalid n: must be between 1 and 3, got {-2**70}")]:
        with pytest.raises(seawall.SeawallConfigError) as e:
            rl.try_acquire(n)
        assert (str(e.value), e.value.field) == (message, "n")
    with pytest.raises(TypeError):
        rl.try_acquire(1.0)
    assert rl.try_acquire(3)


def test_a_negative_count_of_cells_is_named_as_given_by_every_way_in():
    # -1 is no count of cells: the error says the range and the -1, never "must
    # not be zero" (what a count clamped at 0 would say).
    rl = ten_per_second(Clock())
    keyed = seawall.RateLimiter(10, burst=3, keyed=True, clock=Clock())
    for take in (rl.take, rl.acquire, keyed.for_key("a").take, lambda n: keyed.take(n, key=7)):
        with pytest.raises(seawall.SeawallConfigError) as e:
            take(-1)
        assert (str(e.value), e.value.field) == ("invalid n: must be between 1 and 3, got -1", "n")
    native = getattr(rl, "_native")
    with pytest.raises(seawall.SeawallConfigError) as e:
        native.take(-1)
    assert str(e.value) == "invalid n: must be between 1 and 3, got -1"
    assert rl.take(3) is None  # nothing was taken by the refusals


def test_acquire_sleeps_exactly_the_retry_after():
    c = Clock()
    rl = seawall.RateLimiter(10, burst=1, clock=c, sleep=c.sleep)
    assert rl.acquire()
    assert rl.acquire()
    assert c.slept == [0.1]
    # A wait of 100 ms does not fit a 50 ms timeout: False at once, nothing taken.
    assert rl.acquire(timeout=0.05) is False
    assert c.slept == [0.1]
    assert rl.acquire(timeout=0.1)
    assert c.slept == [0.1, 0.1]


def test_acquire_with_the_real_clock_waits_for_the_next_cell():
    rl = seawall.RateLimiter(50, burst=1)  # one cell every 20 ms
    assert rl.acquire()
    t0 = seawall.monotonic()
    assert rl.acquire(timeout=5.0)
    assert seawall.monotonic() - t0 >= 0.015


def test_acquire_async_and_its_cancellation_leave_nothing_behind():
    c = Clock()

    async def main():
        rl = seawall.RateLimiter(1, per=10.0, burst=1, clock=c)  # T = 10 s
        assert await rl.acquire_async()
        assert await rl.acquire_async(timeout=1.0) is False
        task = asyncio.ensure_future(rl.acquire_async())  # sleeps 10 s in real asyncio
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return rl

    rl = asyncio.run(main())
    # The cancelled wait took nothing: the same 10 s are still to wait.
    assert rl.take() == 10.0


def test_decorator_and_with_raise_when_not_waiting():
    c = Clock()
    rl = seawall.RateLimiter(10, burst=1, name="upstream", wait=False, clock=c)

    @rl
    def call(x):
        return x * 2

    assert call(21) == 42
    with pytest.raises(seawall.RateLimitedError) as e:
        call(1)
    assert (e.value.name, ns(e.value.retry_after), e.value.key) == ("upstream", 100_000_000, None)
    assert "retry after 0.100 s" in str(e.value)
    with pytest.raises(seawall.RateLimitedError):
        with rl:
            pass
    c.t = 0.1
    with rl:
        pass


def test_waiting_forms_wait_up_to_max_wait():
    c = Clock()
    rl = seawall.RateLimiter(10, burst=1, clock=c, sleep=c.sleep, async_sleep=c.async_sleep, max_wait=0.15)

    @rl
    def call():
        return "ok"

    @rl
    async def acall():
        return "aok"

    @rl
    def gen():
        yield 1
        yield 2

    @rl
    async def agen():
        yield "a"

    async def async_forms():
        out = [await acall()]
        async with rl:
            out.append("with")
        out.append([x async for x in agen()])
        return out

    assert call() == "ok"
    assert asyncio.run(async_forms()) == ["aok", "with", ["a"]]
    assert list(gen()) == [1, 2]
    assert c.slept == [0.1, 0.1, 0.1, 0.1]
    # After three cells at once the next waits 100 ms: more than a max_wait of 50 ms.
    rl2 = seawall.RateLimiter(10, burst=3, clock=c, sleep=c.sleep, max_wait=0.05)
    assert rl2.try_acquire(3)
    with pytest.raises(seawall.RateLimitedError) as e:
        with rl2:
            pass
    assert ns(e.value.retry_after) == 100_000_000


def test_keyed_limits_each_key():
    c = Clock()
    rl = ten_per_second(c, keyed=True, name="per-client")
    a = rl.for_key("client-a")
    assert [a.try_acquire() for _ in range(4)] == [True, True, True, False]
    assert ns(a.take()) == 100_000_000
    # Another key on another of the 4096 slots has its own burst of 3.
    others = [k for k in (f"client-{i}" for i in range(50)) if rl.try_acquire(key=k)]
    assert len(others) >= 49
    b = others[0]
    assert rl.try_acquire(2, key=b)
    assert not rl.try_acquire(key=b)
    k7 = seawall.RateLimiter(10, burst=1, keyed=True, wait=False, clock=c).for_key(7)
    with k7:
        pass
    with pytest.raises(seawall.RateLimitedError) as e:
        with k7:
            pass
    assert e.value.key == 7
    with pytest.raises(seawall.SeawallError):
        rl.try_acquire()  # keyed needs a key
    with pytest.raises(seawall.SeawallError):
        ten_per_second(c).try_acquire(key=1)
    with pytest.raises(TypeError):
        rl.for_key(1.5)
    with pytest.raises(TypeError):
        ten_per_second(c).for_key(1)


def test_keys_are_ints_modulo_2_64_or_utf8_bytes():
    assert key_word(5) == (5, None)
    assert key_word(-1) == (2**64 - 1, None)
    assert key_word(2**64 + 3) == (3, None)
    assert key_word("é") == key_word("é".encode()) == key_word(bytearray("é".encode())) == (None, b"\xc3\xa9")
    c = Clock()
    rl = seawall.RateLimiter(10, burst=1, keyed=True, clock=c)
    assert rl.try_acquire(key="é")
    assert not rl.try_acquire(key="é".encode())  # one key, one slot
    assert rl.try_acquire(key=3) and not rl.try_acquire(key=2**64 + 3)
    with pytest.raises(TypeError):
        key_word(True)
    with pytest.raises(TypeError):
        rl.try_acquire(key=1.5)


@pytest.mark.skipif(not seawall._native.SHARED_SUPPORTED, reason="no native 128-bit atomics")
def test_one_shared_limiter_for_two_processes():
    name = f"py-rate-{os.getpid()}"
    seawall.RateLimiter.unlink_shared(name)
    # One cell per 1000 s: nothing comes back while the test runs.
    rl = seawall.RateLimiter(1, per=1000.0, burst=3, shared=name)
    assert rl.shared and rl.created and rl.name == name
    child = textwrap.dedent(f"""
        import seawall
        rl = seawall.RateLimiter(1, per=1000.0, burst=3, shared={name!r})
        assert not rl.created
        print(rl.try_acquire(2))
    """)
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    assert rl.try_acquire()
    assert not rl.try_acquire()
    with pytest.raises(seawall.SharedRegionError) as e:
        seawall.RateLimiter(1, per=1000.0, burst=4, shared=name)
    assert "every process must give the same rate, per and burst" in str(e.value)
    seawall.RateLimiter.unlink_shared(name)
    # A keyed one: a string key taken in another process (another hash() salt)
    # is the same key here, through the creator's seed.
    k = seawall.RateLimiter(1, per=1000.0, burst=1, shared=name, keyed=True)
    child = textwrap.dedent(f"""
        import seawall
        k = seawall.RateLimiter(1, per=1000.0, burst=1, shared={name!r}, keyed=True)
        print(k.try_acquire(key="client-42"))
    """)
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "True"
    assert not k.try_acquire(key="client-42")
    assert k.try_acquire(key="client-43") or k.try_acquire(key="client-44")
    seawall.RateLimiter.unlink_shared(name, keyed=True)


def test_a_rejection_is_never_a_breaker_failure():
    c = Clock()
    rl = seawall.RateLimiter(10, burst=1, wait=False, clock=c)
    breaker = seawall.CircuitBreaker(consecutive_failures=1, failure_rate_threshold=None, clock=c)
    guarded = breaker(rl(lambda: "ok"))
    assert guarded() == "ok"
    for _ in range(3):
        with pytest.raises(seawall.RateLimitedError):
            guarded()
    assert breaker.state == seawall.State.CLOSED


def test_retry_waits_out_the_retry_after():
    rl = seawall.RateLimiter(20, burst=1, wait=False)  # one cell every 50 ms
    calls = []
    retry = seawall.Retry(attempts=3, backoff=seawall.Backoff(base=0.001, jitter="none"), timeout=5.0)

    @retry
    @rl
    def call():
        calls.append(seawall.monotonic())
        return len(calls)

    assert call() == 1
    assert call() == 2  # refused once, then slept at least the 50 ms it was told
    assert calls[1] - calls[0] >= 0.045
    # A retry-after past the deadline gives up at once with the limiter's error.
    slow = seawall.RateLimiter(1, per=100.0, burst=1, wait=False)
    short = seawall.Retry(attempts=5, backoff=seawall.Backoff(base=0.001, jitter="none"), timeout=1.0)
    limited = short(slow(lambda: "x"))
    assert limited() == "x"
    t0 = seawall.monotonic()
    with pytest.raises(seawall.RateLimitedError):
        limited()
    assert seawall.monotonic() - t0 < 0.5


def test_prometheus_counts_admitted_and_rejected():
    prometheus_client = pytest.importorskip("prometheus_client")
    from seawall.prometheus import SeawallCollector

    rl = ten_per_second(Clock(), name="quota")
    for _ in range(5):
        rl.try_acquire()
    reg = prometheus_client.CollectorRegistry()
    reg.register(SeawallCollector(rl))
    assert reg.get_sample_value("seawall_rate_limiter_admitted_total", {"name": "quota"}) == 3
    assert reg.get_sample_value("seawall_rate_limiter_rejected_total", {"name": "quota"}) == 2


def test_a_request_that_never_conforms_is_refused_at_once():
    # 0.7 s before the end of the u64 clock, one cell per 10 s: the cell would
    # end past 2**64 - 1 ns, so no wait admits it (retry-after inf).
    c = Clock(18446744073.0)
    rl = seawall.RateLimiter(1, per=10.0, burst=1, clock=c, sleep=c.sleep)
    assert rl.take() == float("inf")
    assert rl.acquire() is False
    with pytest.raises(seawall.RateLimitedError) as e:
        with rl:
            pass
    assert e.value.retry_after == float("inf")
    assert c.slept == []
