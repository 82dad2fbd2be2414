"""A bad duration is refused naming the keyword the user gave, in seconds (the
unit Python users write), never a field the package made of it or a bound in
nanoseconds; a bad attempt or count is a SeawallConfigError saying what the
user passed, never a bare OverflowError or a word about zero."""

import datetime

import pytest

import seawall
from seawall import Backoff, CircuitBreaker, TimeWindow

# The core's bucket width is 0.1 ms ..= (2**64 - 1) // buckets ns; for 10
# buckets that is a duration of 10 * 100_000 ns = 0.001 s up to
# 10 * 1_844_674_407_370_955_161 ns = 18_446_744_073.70955161 s.
TEN_BUCKETS = (
    "must be between 0.001 and 18446744073.709553 seconds for 10 buckets "
    "(a bucket 0.0001 to 1844674407.3709552 seconds wide)"
)


@pytest.mark.parametrize("duration, shown", [(1e300, "1e+300"), (1e-5, "1e-05"), (0, "0.0"), (2e10, "20000000000.0")])
def test_a_time_window_out_of_range_names_its_duration_in_seconds(duration, shown):
    with pytest.raises(seawall.SeawallConfigError) as e:
        CircuitBreaker(window=TimeWindow(duration))
    assert e.value.field == "window.duration"
    assert str(e.value) == f"invalid window.duration: {TEN_BUCKETS}, got {shown}"
    assert isinstance(e.value, ValueError)


def test_a_time_window_at_its_bounds_is_accepted():
    CircuitBreaker(window=TimeWindow(0.001))  # 10 buckets of exactly 0.1 ms
    CircuitBreaker(window=TimeWindow(0.0001, buckets=1))
    with pytest.raises(seawall.SeawallConfigError) as e:
        CircuitBreaker(window=TimeWindow(0.00009, buckets=1))
    assert e.value.field == "window.duration"
    assert "must be between 0.0001 and 18446744073.709553 seconds for 1 buckets" in str(e.value)


@pytest.mark.parametrize("open_duration, shown", [(1e300, "1e+300"), (301, "301.0"), (datetime.timedelta(minutes=6), "360.0")])
def test_an_open_duration_above_the_default_cap_names_the_open_duration(open_duration, shown):
    with pytest.raises(seawall.SeawallConfigError) as e:
        CircuitBreaker(open_duration=open_duration)
    assert e.value.field == "open_duration"
    assert str(e.value) == (
        "invalid open_duration: must not be more than max_open_duration (300.0 seconds by default: "
        f"give a larger max_open_duration, or None for no cap), got {shown}"
    )
    # With the cap raised or off, the same open duration is fine.
    CircuitBreaker(open_duration=open_duration, max_open_duration=None)
    CircuitBreaker(open_duration=open_duration, max_open_duration=1e300)


def test_a_cap_below_the_open_duration_names_the_cap():
    with pytest.raises(seawall.SeawallConfigError) as e:
        CircuitBreaker(max_open_duration=10)
    assert (e.value.field, str(e.value)) == (
        "max_open_duration",
        "invalid max_open_duration: must not be less than open_duration (30.0 seconds), got 10.0",
    )
    CircuitBreaker(open_duration=300, max_open_duration=300)  # equal is fine


@pytest.mark.parametrize("attempt", [-1, 0, 2**32, -(2**70)])
def test_a_backoff_attempt_out_of_range_is_a_config_error_naming_it(attempt):
    with pytest.raises(seawall.SeawallConfigError) as e:
        Backoff().delay(attempt)
    assert (e.value.field, str(e.value)) == (
        "attempt",
        f"invalid attempt: must be a whole number between 1 and 4294967295, got {attempt}",
    )


def test_a_backoff_attempt_in_range_draws_a_delay():
    # jitter none: exp(n) = min(10, 0.1 * 2**(n-1)) s
    b = Backoff(jitter="none")
    assert b.delay(1) == 0.1
    assert b.delay(3) == 0.4
    assert b.delay(2**32 - 1) == 10.0
    with pytest.raises(seawall.SeawallConfigError) as e:
        b.delay(2, -1.0)
    assert e.value.field == "previous"


def test_a_backoff_base_above_the_default_cap_names_the_base():
    with pytest.raises(seawall.SeawallConfigError) as e:
        Backoff(base=1e300)
    assert (e.value.field, str(e.value)) == (
        "base",
        "invalid base: must not be more than max (10.0 seconds by default: give a larger max), got 1e+300",
    )
    # Both given: the cap is named, with the user's keyword (not the core's "backoff.base").
    with pytest.raises(seawall.SeawallConfigError) as e:
        Backoff(base=20, max=5)
    assert (e.value.field, str(e.value)) == ("max", "invalid max: must not be less than base")


def test_a_native_duration_range_is_said_in_seconds():
    # Health's bucket width: 1 ms ..= (2**64 - 1) // 10 ns for 10 buckets.
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.Health(bucket_width=1e300)
    assert (e.value.field, str(e.value)) == (
        "bucket_width",
        "invalid bucket_width: must be between 0.001 and 1844674407.3709552 seconds",
    )


def test_a_zero_base_is_the_cores_backoff_with_zero_delays():
    # DESIGN §4: base 0 is valid and every delay is 0, whatever the jitter and
    # whatever previous delay decorrelated jitter is handed.
    for jitter in ("none", "full", "equal", "decorrelated", "proportional"):
        b = Backoff(base=0, jitter=jitter)
        native = getattr(b, "_native")
        assert [native.delay_ns(n, 10**9, 2**64 - 1) for n in (1, 2, 5, 2**32 - 1)] == [0, 0, 0, 0]
        assert b.delay(7, 2.0) == 0.0
