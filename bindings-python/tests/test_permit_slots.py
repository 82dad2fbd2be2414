"""A shared breaker's permit table size (``permit_slots``): how many calls of
every process of the host may be in flight at once."""

import os
import uuid

import pytest

import seawall

pytestmark = pytest.mark.skipif(not seawall._native.SHARED_SUPPORTED, reason="no native 128-bit atomics")


@pytest.fixture
def region():
    name = f"pytest-slots-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    yield name
    seawall.CircuitBreaker.unlink_shared(name)


def breaker(region, **kw):
    return seawall.CircuitBreaker(shared=region, window=seawall.CountWindow(100), **kw)


def test_the_smallest_table_admits_256_calls_and_refuses_the_257th(region):
    b = breaker(region, permit_slots=256)
    held = [b.acquire() for _ in range(256)]
    with pytest.raises(seawall.PermitsExhaustedError) as e:
        b.acquire()
    assert (e.value.limit, e.value.state, e.value.retry_after) == (256, "closed", None)
    assert "256" in str(e.value)
    # Another handle on the same region sees the same full table.
    other = breaker(region, permit_slots=256)
    with pytest.raises(seawall.PermitsExhaustedError):
        other.acquire()
    held.pop().success()
    assert other.call(lambda: "runs") == "runs"
    held.append(b.acquire())
    with pytest.raises(seawall.PermitsExhaustedError):
        b.acquire()
    for p in held:
        p.ignore()
    assert b.metrics()["permits_outstanding"] == 0


def test_an_opener_of_another_size_is_refused_naming_permit_slots(region):
    breaker(region, permit_slots=256)
    with pytest.raises(seawall.SharedRegionError, match="permit_slots differs"):
        breaker(region)  # the default, 4096
    with pytest.raises(seawall.SharedRegionError, match="permit_slots differs"):
        breaker(region, permit_slots=32768)
    assert breaker(region, permit_slots=256).shared


@pytest.mark.parametrize("bad", [0, 100, 255, 4095, 65536, -1])
def test_a_size_that_is_not_offered_is_a_config_error_listing_the_sizes(region, bad):
    with pytest.raises(seawall.SeawallConfigError) as e:
        breaker(region, permit_slots=bad)
    assert e.value.field == "permit_slots"
    assert "must be one of 256, 4096, 32768, 262144" in str(e.value)


def test_a_local_breaker_refuses_permit_slots():
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.CircuitBreaker(permit_slots=4096)
    assert e.value.field == "permit_slots"
    assert "shared breakers only" in str(e.value)
