"""Every numeric setting refuses a bool and an integer beyond 64 bits with a
SeawallConfigError naming the keyword (never a bare OverflowError, never
``True`` read as 1), and every duration accepts a ``datetime.timedelta``."""

import datetime

import pytest

import seawall
from seawall import Backoff, Bulkhead, CircuitBreaker, CountWindow, Retry, TimeWindow

# (constructor, keyword): each keyword is a number of the public API.
BREAKER = [
    "failure_rate_threshold",
    "minimum_calls",
    "slow_call_duration",
    "slow_call_rate_threshold",
    "consecutive_failures",
    "open_duration",
    "open_backoff_multiplier",
    "max_open_duration",
    "open_jitter_factor",
    "half_open_max_calls",
    "half_open_success_threshold",
    "half_open_max_wait",
    "jitter_seed",
]
SETTINGS = (
    [(CircuitBreaker, k) for k in BREAKER]
    + [(Bulkhead, k) for k in ("max_concurrent", "max_queue", "queue_timeout")]
    + [(Backoff, k) for k in ("base", "multiplier", "max", "jitter_factor")]
    + [(Retry, k) for k in ("attempts", "timeout", "seed")]
    + [(seawall.RetryBudget, k) for k in ("ttl", "min_retries_per_sec", "percent_can_retry")]
    + [(seawall.RetryThrottle, k) for k in ("max_tokens", "token_ratio")]
    + [
        (seawall.Health, k)
        for k in ("buckets", "bucket_width", "degraded_error_rate", "unhealthy_error_rate", "degraded_p99", "unhealthy_p99")
    ]
)


def ids(case):
    return f"{case[0].__name__}.{case[1]}"


@pytest.mark.parametrize("case", SETTINGS, ids=ids)
@pytest.mark.parametrize("flag", [True, False])
def test_a_bool_is_refused_naming_the_field(case, flag):
    cls, keyword = case
    with pytest.raises(seawall.SeawallConfigError) as e:
        cls(**{keyword: flag})
    assert e.value.field == keyword
    assert keyword in str(e.value)


WHOLE = {
    "minimum_calls", "consecutive_failures", "half_open_max_calls", "half_open_success_threshold",
    "jitter_seed", "max_concurrent", "max_queue", "attempts", "seed", "min_retries_per_sec", "buckets",
}


# A whole number overflows 64 bits at 2**64; a float setting holds 2**64 (a
# duration saturates) and overflows only past the largest float.
OVERFLOWS = [
    (case, huge)
    for case in SETTINGS
    for huge in ([2**64, -(2**64), 10**400] if case[1] in WHOLE else [10**400, -(10**400)])
]


@pytest.mark.parametrize("case,huge", OVERFLOWS, ids=lambda x: ids(x) if isinstance(x, tuple) else "huge")
def test_a_number_beyond_64_bits_is_a_config_error_naming_the_field(case, huge):
    cls, keyword = case
    with pytest.raises(seawall.SeawallConfigError) as e:
        cls(**{keyword: huge})
    assert e.value.field == keyword


@pytest.mark.parametrize("seed_of", [(CircuitBreaker, "jitter_seed"), (Retry, "seed")], ids=ids)
def test_a_negative_seed_is_a_config_error(seed_of):
    cls, keyword = seed_of
    with pytest.raises(seawall.SeawallConfigError) as e:
        cls(**{keyword: -1})
    assert e.value.field == keyword
    cls(**{keyword: 2**64 - 1})  # the largest seed is fine


def test_window_sizes_refuse_bools_naming_the_window_field():
    with pytest.raises(seawall.SeawallConfigError) as e:
        CircuitBreaker(window=CountWindow(True))
    assert e.value.field == "window.size"
    with pytest.raises(seawall.SeawallConfigError) as e:
        CircuitBreaker(window=TimeWindow(10.0, buckets=True))
    assert e.value.field == "window.buckets"
    with pytest.raises(seawall.SeawallConfigError) as e:
        CircuitBreaker(window=CountWindow(2**64))
    assert e.value.field == "window.size"


def test_timeout_refuses_a_bool_like_every_other_duration():
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.timeout(True)
    assert e.value.field == "timeout"


@pytest.mark.parametrize("bad", ["x", None, True, [1]])
def test_a_share_that_is_not_a_percentage_names_shares(bad):
    with pytest.raises(seawall.SeawallConfigError) as e:
        Bulkhead(4, shares={"low": bad})
    assert e.value.field == "shares"
    assert "'low'" in str(e.value)


def test_strings_are_config_errors_naming_the_field():
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.RetryBudget(ttl="10")
    assert e.value.field == "ttl"
    with pytest.raises(seawall.SeawallConfigError) as e:
        Bulkhead("4")
    assert e.value.field == "max_concurrent"


def test_durations_accept_timedelta():
    clock = [0.0]
    b = CircuitBreaker(
        window=CountWindow(2),
        minimum_calls=2,
        open_duration=datetime.timedelta(minutes=2),
        clock=lambda: clock[0],
    )
    for _ in range(2):
        with pytest.raises(ValueError):
            b.call(_boom)
    assert b.state == "open"
    assert b.retry_after == pytest.approx(120.0)
    clock[0] = 119.0
    assert b.retry_after == pytest.approx(1.0)
    assert seawall.timeout(datetime.timedelta(milliseconds=250)).seconds == 0.25
    assert Retry(timeout=datetime.timedelta(seconds=3)).timeout == 3.0
    assert Bulkhead(1, queue_timeout=datetime.timedelta(milliseconds=5)).queue_timeout == 0.005
    # Backoff base 0.5 s, no jitter: retry 2 waits 0.5 * 2 s.
    assert Backoff(base=datetime.timedelta(milliseconds=500), jitter="none").delay(2) == pytest.approx(1.0)


def _boom():
    raise ValueError("boom")


# The rate limiter's settings follow the same rules; ``rate`` is given where
# the case is about another keyword.
LIMITER = ["rate", "per", "burst", "max_wait"]


def limiter(keyword, value):
    kw = {"rate": 10, keyword: value}
    return seawall.RateLimiter(**kw)


@pytest.mark.parametrize("keyword", LIMITER)
@pytest.mark.parametrize("flag", [True, False])
def test_a_rate_limiter_refuses_a_bool_naming_the_field(keyword, flag):
    with pytest.raises(seawall.SeawallConfigError) as e:
        limiter(keyword, flag)
    assert e.value.field == keyword


@pytest.mark.parametrize(
    "keyword,huge",
    [("rate", 2**64), ("rate", -(2**64)), ("burst", 2**64), ("per", 10**400), ("max_wait", 10**400)],
)
def test_a_rate_limiter_number_beyond_64_bits_names_the_field(keyword, huge):
    with pytest.raises(seawall.SeawallConfigError) as e:
        limiter(keyword, huge)
    assert e.value.field == keyword


def test_a_rate_limiter_acquire_timeout_refuses_a_bool():
    rl = seawall.RateLimiter(10)
    with pytest.raises(seawall.SeawallConfigError) as e:
        rl.acquire(timeout=True)
    assert e.value.field == "timeout"


def test_rate_limiter_durations_accept_timedelta():
    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    # 10 cells per 2 s, burst 1: one cell every 0.2 s.
    rl = seawall.RateLimiter(
        10, per=datetime.timedelta(seconds=2), burst=1, max_wait=datetime.timedelta(milliseconds=300),
        clock=lambda: now[0], sleep=sleep,
    )
    assert (rl.per, rl.max_wait) == (2.0, 0.3)
    assert rl.try_acquire()
    assert rl.take() == pytest.approx(0.2)
    # The next cell is 0.2 s away: past a 0.1 s limit, within 0.25 s.
    assert not rl.acquire(timeout=datetime.timedelta(milliseconds=100))
    assert rl.acquire(timeout=datetime.timedelta(milliseconds=250))
    assert slept == [pytest.approx(0.2)]
