"""State export / import (DESIGN §3.7; opossum ``toJSON``, cockatiel
``initialState``): a cold start resumes a breaker where the last process left
it. Figures are worked by hand from the spec on a fake clock."""

import json
import os
import uuid

import pytest

import seawall
from seawall import CircuitBreaker, CircuitOpenError, CountWindow, SeawallConfigError, SharedRegionError, State
from conftest import FakeClock


def fail(b):
    with pytest.raises(ValueError):
        with b:
            raise ValueError("down")


def test_a_closed_breaker_exports_a_json_ready_record():
    b = CircuitBreaker()
    assert b.export_state() == {"version": 1, "state": "closed", "openings": 0, "retry_after": None}
    assert json.loads(json.dumps(b.export_state())) == b.export_state()


def test_window_counts_are_not_carried_so_the_import_needs_the_whole_run_again():
    # Five failures in a row open it. After 3, the old breaker needs 2 more; the
    # imported one starts with an empty window (DESIGN §3.7) and needs all 5.
    kw = dict(consecutive_failures=5, failure_rate_threshold=None, clock=FakeClock())
    old = CircuitBreaker(**kw)
    for _ in range(3):
        fail(old)
    saved = old.export_state()
    assert saved == {"version": 1, "state": "closed", "openings": 0, "retry_after": None}
    new = CircuitBreaker(initial_state=saved, **kw)
    for _ in range(4):
        fail(new)
    assert new.state == State.CLOSED
    fail(new)
    assert new.state == State.OPEN
    # The old one, with its 3, opens after 2 more.
    fail(old)
    assert old.state == State.CLOSED
    fail(old)
    assert old.state == State.OPEN


def test_an_open_breaker_stays_open_for_exactly_the_time_it_had_left_then_probes():
    kw = dict(consecutive_failures=1, open_duration=30.0, open_backoff_multiplier=2.0, max_open_duration=1000.0)
    clock = FakeClock(100.0)
    old = CircuitBreaker(clock=clock, **kw)
    fail(old)  # open until 130
    clock.advance(12.0)
    saved = json.loads(json.dumps(old.export_state()))
    assert saved == {"version": 1, "state": "open", "openings": 1, "retry_after": pytest.approx(18.0)}
    # Another process, another clock: the record holds the time left, not a time.
    clock2 = FakeClock(5000.0)
    new = CircuitBreaker(clock=clock2, initial_state=saved, **kw)
    assert new.state == State.OPEN
    assert new.retry_after == pytest.approx(18.0)
    clock2.advance(17.9)
    with pytest.raises(CircuitOpenError) as e:
        with new:
            pass
    assert e.value.retry_after == pytest.approx(0.1)
    clock2.advance(0.1)
    # The probe fails: the second opening in a row lasts 30 * 2 = 60 s.
    fail(new)
    assert new.state == State.OPEN
    assert new.metrics()["openings"] == 2
    assert new.retry_after == pytest.approx(60.0)


def test_half_open_imports_as_open_with_no_time_left_forced_open_and_disabled_as_they_were():
    h = CircuitBreaker(initial_state={"version": 1, "state": "half_open", "openings": 1, "retry_after": None})
    assert h.call(lambda: "probe") == "probe"
    assert h.state == State.CLOSED
    f = CircuitBreaker(initial_state={"version": 1, "state": State.FORCED_OPEN, "openings": 0, "retry_after": None})
    with pytest.raises(CircuitOpenError) as e:
        f.call(lambda: 1)
    assert e.value.state == "forced_open"
    d = CircuitBreaker(initial_state={"version": 1, "state": "disabled", "openings": 0})
    assert d.state == State.DISABLED


def test_listeners_do_not_hear_the_state_a_breaker_starts_in():
    heard = []
    b = CircuitBreaker(
        listeners=[lambda _b, old, new: heard.append((old, new))],
        initial_state={"version": 1, "state": "open", "openings": 1, "retry_after": 10.0},
    )
    assert b.state == State.OPEN
    assert heard == []


GOOD = {"version": 1, "state": "open", "openings": 1, "retry_after": 10.0}


@pytest.mark.parametrize(
    "record, field",
    [
        ("open", "initial_state"),
        ({**GOOD, "version": 2}, "initial_state.version"),
        ({**GOOD, "version": True}, "initial_state.version"),
        ({k: v for k, v in GOOD.items() if k != "version"}, "initial_state.version"),
        ({**GOOD, "state": "ajar"}, "initial_state.state"),
        ({**GOOD, "openings": -1}, "initial_state.openings"),
        ({**GOOD, "openings": 2**32}, "initial_state.openings"),
        ({**GOOD, "openings": True}, "initial_state.openings"),
        ({k: v for k, v in GOOD.items() if k != "openings"}, "initial_state.openings"),
        ({**GOOD, "retry_after": -5.0}, "initial_state.retry_after"),
        ({**GOOD, "retry_after": float("nan")}, "initial_state.retry_after"),
        ({**GOOD, "retry_after": float("inf")}, "initial_state.retry_after"),
        ({**GOOD, "retry_after": None}, "initial_state.retry_after"),
        ({**GOOD, "state": "closed"}, "initial_state.retry_after"),
        ({**GOOD, "extra": 1}, "initial_state.extra"),
    ],
)
def test_a_bad_record_is_a_config_error_naming_the_field(record, field):
    with pytest.raises(SeawallConfigError) as e:
        CircuitBreaker(initial_state=record)
    assert e.value.field == field


@pytest.mark.skipif(not seawall._native.SHARED_SUPPORTED, reason="no native 128-bit atomics")
def test_a_shared_breaker_refuses_an_initial_state_that_disagrees_with_the_region():
    name = f"pytest-initial-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        opened = {"version": 1, "state": "open", "openings": 1, "retry_after": 60.0}
        first = CircuitBreaker(shared=name, initial_state=opened)
        assert first.state == State.OPEN
        # The region exists and is open: the same state is accepted (it
        # changes nothing), another is refused.
        again = CircuitBreaker(shared=name, initial_state={**opened, "retry_after": 1.0})
        assert again.retry_after == pytest.approx(60.0, abs=5.0)
        with pytest.raises(SharedRegionError, match="already 'open'.*initial_state 'closed' disagrees"):
            CircuitBreaker(shared=name, initial_state={"version": 1, "state": "closed", "openings": 0})
        assert first.state == State.OPEN
    finally:
        CircuitBreaker.unlink_shared(name)


def test_a_shared_breaker_created_here_starts_in_the_record():
    if not seawall._native.SHARED_SUPPORTED:
        pytest.skip("no native 128-bit atomics")
    name = f"pytest-initial-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        b = CircuitBreaker(shared=name, window=CountWindow(4), minimum_calls=4,
                           initial_state={"version": 1, "state": "forced_open", "openings": 0})
        assert b.state == State.FORCED_OPEN
        other = CircuitBreaker(shared=name, window=CountWindow(4), minimum_calls=4)
        assert other.state == State.FORCED_OPEN
    finally:
        CircuitBreaker.unlink_shared(name)
