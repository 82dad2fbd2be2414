"""DESIGN §8: a handle whose thread or process ends normally gives back what it
held. A shared breaker's only half-open probe, held by a thread that ends or by
a process that exits, is given back as ignored: the breaker leaves the stuck
half-open with no reclaim (which would find nothing: the holder's pid may still
run)."""

import os
import subprocess
import sys
import threading
import time
import uuid

import pytest

import seawall

pytestmark = pytest.mark.skipif(not seawall._native.SHARED_SUPPORTED, reason="no native 128-bit atomics")

CONFIG = dict(
    window=seawall.CountWindow(1),
    minimum_calls=1,
    open_duration=0.01,
    open_jitter_factor=0.0,
    half_open_max_calls=1,
    half_open_success_threshold=1,
    half_open_max_wait=None,
)
CONFIG_SOURCE = (
    "dict(window=seawall.CountWindow(1), minimum_calls=1, open_duration=0.01, open_jitter_factor=0.0, "
    "half_open_max_calls=1, half_open_success_threshold=1, half_open_max_wait=None)"
)


@pytest.fixture
def opened():
    """A fresh shared breaker, opened by one failure and past its open period."""
    name = f"pytest-end-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    b = seawall.CircuitBreaker(shared=name, **CONFIG)
    with pytest.raises(ValueError):
        with b:
            raise ValueError("down")
    assert b.state == "open"
    time.sleep(0.03)
    yield name, b
    seawall.CircuitBreaker.unlink_shared(name)


def assert_given_back(b):
    """The probe is back: counted once as ignored, and the next probe closes the breaker."""
    m = b.metrics()
    assert (m["state"], m["half_open_in_flight"], m["permits_outstanding"]) == ("half_open", 0, 0)
    t = m["totals"]
    # The opening failure, and the probe given back.
    assert (t["admitted"], t["failures"], t["ignored"], t["successes"]) == (2, 1, 1, 0)
    assert b.reclaim_abandoned() == 0
    assert b.call(lambda: "probe") == "probe"
    assert b.state == "closed"


def _ends_holding(hold):
    """Run `hold` in a thread and return once that thread has ended at the OS level.

    `join()` returns when the interpreter is done with the thread, a moment before
    the OS thread exits and runs its native thread-local destructors (where a
    `with breaker:` block's permit lives): wait for the task to leave
    /proc/self/task as well, bounded."""
    tid = []

    def run():
        tid.append(threading.get_native_id())
        hold()

    t = threading.Thread(target=run)
    t.start()
    t.join()
    task = f"/proc/self/task/{tid[0]}"
    deadline = time.monotonic() + 5.0
    while os.path.exists(task) and time.monotonic() < deadline:
        time.sleep(0.001)


# A thread "ends" when its run() returns: its frames, its threading.local values
# and its context (the `with breaker:` stack of that thread) are dropped then,
# and a permit dropped unrecorded records itself as ignored.


def test_a_thread_that_ends_inside_with_breaker_gives_the_probe_back(opened):
    _, b = opened
    _ends_holding(b.__enter__)  # entered, never exited
    assert_given_back(b)


def test_a_thread_that_ends_with_a_permit_in_a_thread_local_gives_it_back(opened):
    _, b = opened
    local = threading.local()
    seen = []

    def hold():
        local.permit = b.acquire()
        seen.append(b.metrics()["half_open_in_flight"])

    _ends_holding(hold)
    assert seen == [1]
    assert_given_back(b)


# A process "ends normally" when its interpreter finalizes: at the end of its
# script or on sys.exit(). What finalization never frees (a daemon thread
# stopped in the middle of a decorated call, whose permit lives on that
# thread's stack) is given back by the package's atexit handler, which runs
# after the non-daemon threads are joined.

HOLD_IN_DAEMON = """
import sys, threading, time, seawall
b = seawall.CircuitBreaker(shared=sys.argv[1], **{config})
held = threading.Event()

@b
def call():
    held.set()
    time.sleep(600)

threading.Thread(target=call, daemon=True).start()
held.wait()
assert b.metrics()["half_open_in_flight"] == 1
"""


@pytest.mark.parametrize("ending", ["end of script", "sys.exit(0)"])
def test_a_process_that_exits_while_a_daemon_thread_holds_the_probe_gives_it_back(opened, ending):
    name, b = opened
    source = HOLD_IN_DAEMON.format(config=CONFIG_SOURCE)
    if ending == "sys.exit(0)":
        source += "sys.exit(0)\nraise AssertionError('not reached')\n"
    child = subprocess.run([sys.executable, "-c", source, name], capture_output=True, text=True, timeout=60)
    assert (child.returncode, child.stderr) == (0, "")
    assert_given_back(b)


def test_a_process_that_exits_holding_a_permit_object_gives_it_back(opened):
    name, b = opened
    source = (
        f"import sys, seawall\nb = seawall.CircuitBreaker(shared=sys.argv[1], **{CONFIG_SOURCE})\n"
        "permit = b.acquire()\nsys.exit(0)\n"
    )
    child = subprocess.run([sys.executable, "-c", source, name], capture_output=True, text=True, timeout=60)
    assert (child.returncode, child.stderr) == (0, "")
    assert_given_back(b)


def test_a_fork_child_that_exits_leaves_its_parents_probe_alone(opened):
    name, b = opened
    source = f"""
import os, sys, seawall
b = seawall.CircuitBreaker(shared=sys.argv[1], **{CONFIG_SOURCE})
permit = b.acquire()
pid = os.fork()
if pid == 0:
    sys.exit(0)  # finalization and atexit run here, in the child
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0
print(b.metrics()["half_open_in_flight"], permit.used)
permit.success()
"""
    child = subprocess.run([sys.executable, "-c", source, name], capture_output=True, text=True, timeout=60)
    assert (child.returncode, child.stderr, child.stdout) == (0, "", "1 False\n")
    m = b.metrics()
    assert m["state"] == "closed"
    assert (m["totals"]["successes"], m["totals"]["ignored"]) == (1, 0)


# The shared bulkhead gives back the same way: a thread's `with pool:` permit
# when the thread ends, and at exit what a daemon thread holds or waits for.


@pytest.fixture
def pool_region():
    name = f"pytest-end-bh-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    yield name
    seawall.Bulkhead.unlink_shared(name)


def occupancy(pool):
    m = pool.metrics()
    return {k: m[k] for k in ("active", "queued", "permits_outstanding", "tickets_outstanding")}


def test_a_thread_that_ends_inside_with_pool_gives_the_permit_back(pool_region):
    pool = seawall.Bulkhead(1, max_queue=1, shared=pool_region)
    _ends_holding(pool.__enter__)
    assert occupancy(pool) == {"active": 0, "queued": 0, "permits_outstanding": 0, "tickets_outstanding": 0}


def test_a_process_that_exits_while_daemon_threads_hold_and_wait_on_a_pool_gives_both_back(pool_region):
    pool = seawall.Bulkhead(1, max_queue=1, shared=pool_region)
    source = """
import sys, threading, time, seawall
pool = seawall.Bulkhead(1, max_queue=1, shared=sys.argv[1])

@pool
def call():
    time.sleep(600)

for _ in range(2):  # one holds the permit, the other waits in the queue
    threading.Thread(target=call, daemon=True).start()
while pool.metrics()["queued"] != 1:
    time.sleep(0.005)
assert pool.metrics()["active"] == 1
"""
    child = subprocess.run([sys.executable, "-c", source, pool_region], capture_output=True, text=True, timeout=60)
    assert (child.returncode, child.stderr) == (0, "")
    assert occupancy(pool) == {"active": 0, "queued": 0, "permits_outstanding": 0, "tickets_outstanding": 0}
    assert pool.reclaim_abandoned() == (0, 0)
