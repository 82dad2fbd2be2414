"""DESIGN §8, "Self-healing": nothing a dead process held outlives it without
anyone's call. Proven end to end with real servers and SIGKILL, and with no
reclaim_abandoned() anywhere: not in the service, not in this test.

A FastAPI service under gunicorn's uvicorn workers and a Flask service under
its sync workers (tests/_heal_apps.py, built once in the master: --preload)
call a loopback upstream that this test controls, through one shared bulkhead
(4 permits, no queue) and, inside it, one shared breaker (2 half-open probes,
no half_open_max_wait). Workers killed while they hold permits or probes leave
them held (the service's /state shows it); the next callers that need them get
them back, and a service stopped and started again finds its regions whole.
Then a storm of SIGKILLs on processes queueing on a shared bulkhead leaves
nothing held once they are all dead.

Time: the service runs on the OS clock (it is another process), so the waits
here are liveness bounds. The one bound the design sets, a look for dead
holders at most every 100 ms per region, gives the bound for "the next caller
gets what the dead held": 1 s, ten of those intervals."""

import contextlib
import json
import multiprocessing
import os
import random
import subprocess
import sys
import threading
import time
import uuid

import pytest

import seawall
import _mp_workers
from _servers import gunicorn_server, kill_and_wait_gone, proc_stat, upstream_server, wait_for

pytestmark = pytest.mark.skipif(not seawall._native.SHARED_SUPPORTED, reason="no native 128-bit atomics")

# The limits of tests/_heal_apps.py.
LIMIT = 4  # bulkhead permits
PROBES = 2  # half_open_max_calls (and half_open_success_threshold)
WINDOW = 4  # count window, minimum_calls 4, failure rate threshold 50 %

# The next caller needing what the dead held has it within ten heal intervals.
HEAL_BOUND = 1.0
# A liveness bound, for waits that include the breaker's open period (0.2 s).
LIVENESS = 10.0

# name: (gunicorn app, worker class, workers, what the framework needs).
# Flask's sync workers serve one request each: 4 hold the bulkhead's permits,
# 2 more answer the callers it refuses and /state.
SERVICES = {
    "fastapi": ("_heal_apps:make_fastapi()", "uvicorn.workers.UvicornWorker", 4, ("fastapi", "uvicorn")),
    "flask": ("_heal_apps:make_flask()", "sync", 6, ("flask",)),
}

EMPTY = {"active": 0, "queued": 0, "permits_outstanding": 0, "tickets_outstanding": 0}


def held(n):
    return {"active": n, "queued": 0, "permits_outstanding": n, "tickets_outstanding": 0}


class Service:
    """One of SERVICES on its own regions, calling `up`; `start()` runs a
    gunicorn master for it (a context manager), as often as asked."""

    def __init__(self, kind, up, up_url, workdir):
        self.kind, self.up = kind, up
        self.app, self.worker_class, self.workers, _ = SERVICES[kind]
        self.region = f"pytest-heal-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.env = {"SEAWALL_TEST_REGION": self.region, "SEAWALL_TEST_UPSTREAM": up_url}
        self.workdir = workdir

    @contextlib.contextmanager
    def start(self):
        with gunicorn_server(
            self.app, self.workdir, worker_class=self.worker_class, workers=self.workers, env=self.env
        ) as gun:
            yield gun
        # Nothing but gunicorn's log lines: no traceback, nothing the library printed.
        assert gun.foreign_lines() == []


@pytest.fixture(params=sorted(SERVICES))
def service(request, tmp_path):
    for module in ("httpx", "gunicorn") + SERVICES[request.param][3]:
        pytest.importorskip(module)
    with upstream_server() as (up, url):
        s = Service(request.param, up, url, tmp_path)
        try:
            yield s
        finally:
            seawall.Bulkhead.unlink_shared(s.region)
            seawall.CircuitBreaker.unlink_shared(s.region)


def get(url):
    import httpx

    with httpx.Client(timeout=60) as c:
        return c.get(url)


def state(gun):
    """What the regions hold, as a worker of `gun` reads them (reading heals nothing)."""
    r = get(gun.url + "/state")
    assert r.status_code == 200, r.text
    return r.json()


class Calls:
    """GET requests each sent from a thread of its own, left running; `join()`
    gives each one's response, or the exception it ended with."""

    def __init__(self):
        self.threads, self.results = [], {}

    def send(self, url):
        import httpx

        i = len(self.threads)

        def run():
            try:
                with httpx.Client(timeout=60) as c:
                    self.results[i] = c.get(url)
            except httpx.HTTPError as e:  # its worker was killed mid-request
                self.results[i] = e

        t = threading.Thread(target=run, daemon=True)
        self.threads.append(t)
        t.start()
        return t

    def join(self):
        for t in self.threads:
            t.join(60)
            assert not t.is_alive()
        return [self.results[i] for i in range(len(self.threads))]


def admit_next(up, url, calls, inside, refused_by, bound):
    """Send one caller at a time to `url` until one gets through to the held
    upstream (`inside` requests in it then); a caller refused with a 503 by
    `refused_by` ("bulkhead" or "breaker") comes back at once and the next is
    sent after 5 ms. Fails unless one gets through within `bound` seconds of
    the first. Returns the refusals seen."""
    refusals = []
    t0 = time.monotonic()
    while True:
        t = calls.send(url)
        wait_for(lambda: up.in_flight == inside or not t.is_alive(), "the caller to reach the upstream or be refused")
        if up.in_flight == inside:
            return refusals
        t.join()
        r = calls.results[len(calls.threads) - 1]
        assert not isinstance(r, Exception), r
        assert r.status_code == 503 and r.json()["refused"] == refused_by, (r.status_code, r.text)
        refusals.append(r.json())
        assert time.monotonic() - t0 < bound, f"none got through in {bound} s: {len(refusals)} refused, last {r.text}"
        time.sleep(0.005)


def kill_holders(gun, up, calls, expected_in_flight):
    """SIGKILL the workers whose requests the upstream holds (`expected_in_flight`
    of them), let the held requests end, and check each killed worker's caller
    got no answer. Returns the pids killed."""
    up.wait_in_flight(expected_in_flight)
    pids = up.holders()
    workers = gun.worker_pids()
    assert pids and set(pids) <= set(workers), (pids, workers)
    kill_and_wait_gone(pids)
    up.release()
    up.wait_in_flight(0)
    # The callers of the killed workers got no answer; the others of `calls`
    # were refused before.
    results = calls.join()
    assert sum(isinstance(r, Exception) for r in results) == expected_in_flight, results
    assert all(isinstance(r, Exception) or r.status_code == 503 for r in results), results
    return pids


def assert_replaced(gun, killed):
    """gunicorn forked a new worker for each killed one (from its master, where
    the regions were opened: the new ones open nothing)."""
    gun.wait_ready()
    assert not set(killed) & set(gun.worker_pids())


# -- (a) permits held by killed workers ----------------------------------------


def test_the_permits_of_killed_workers_come_back_to_the_next_callers(service):
    up = service.up
    with service.start() as gun:
        url = gun.url + "/call"
        # A slow upstream: 4 callers hold the bulkhead's 4 permits.
        up.hold()
        calls = Calls()
        for _ in range(LIMIT):
            calls.send(url)
        up.wait_in_flight(LIMIT)
        for _ in range(2):  # full: refused, and nothing more reaches the upstream
            r = get(url)
            assert (r.status_code, r.json()) == (503, {"refused": "bulkhead", "reason": "full"})
        assert (up.peak, up.calls) == (LIMIT, LIMIT)
        killed = kill_holders(gun, up, calls, LIMIT)
        # The dead hold every permit: nobody has needed one since.
        assert state(gun)["bulkhead"] == held(LIMIT)
        assert_replaced(gun, killed)

        # The next callers, one at a time, held in the still slow upstream: the
        # first that needs a permit gets the dead workers' permits back.
        up.hold()
        up.reset_peak()
        calls = Calls()
        refusals = [admit_next(up, url, calls, k, "bulkhead", HEAL_BOUND) for k in range(1, LIMIT + 1)]
        r = get(url)  # and no more than the limit: nobody dead holds one now
        assert (r.status_code, r.json()) == (503, {"refused": "bulkhead", "reason": "full"})
        assert (up.peak, up.in_flight) == (LIMIT, LIMIT)
        assert state(gun)["bulkhead"] == held(LIMIT)
        up.release()
        statuses = [r.status_code for r in calls.join()]
        assert statuses.count(200) == LIMIT and statuses.count(503) == len(refusals[0])
        # Once one caller got in, every permit of the dead was back: the others
        # were let in at once. (The first is refused only if another caller
        # looked for dead holders less than 100 ms before.)
        assert refusals[1:] == [[]] * (LIMIT - 1)
        print(f"{service.kind}: refusals before the first caller got in: {len(refusals[0])}")
        assert state(gun)["bulkhead"] == EMPTY


# -- (b) half-open probes held by killed workers -------------------------------


def open_the_breaker(gun, up):
    """A failing upstream: WINDOW failures of WINDOW calls (100 % >= 50 %, the
    minimum of 4 calls reached) open the breaker at the last one."""
    up.failing = True
    assert [get(gun.url + "/call").status_code for _ in range(WINDOW)] == [502] * WINDOW
    b = state(gun)["breaker"]
    assert (b["state"], b["totals"]["failures"], b["totals"]["transitions"]) == ("open", WINDOW, 1)
    up.failing = False


def take_the_probes(gun, up):
    """A slow upstream after the open period: the first PROBES callers are the
    probes, held in the upstream."""
    up.hold()
    calls = Calls()
    for k in range(1, PROBES + 1):
        admit_next(up, gun.url + "/call", calls, k, "breaker", LIVENESS)
    b = state(gun)["breaker"]
    assert (b["state"], b["half_open_in_flight"]) == ("half_open", PROBES)
    return calls


def test_a_breaker_whose_probes_were_killed_probes_again_and_closes(service):
    up = service.up
    with service.start() as gun:
        url = gun.url + "/call"
        open_the_breaker(gun, up)
        calls = take_the_probes(gun, up)
        r = get(url)  # a third caller: both probe slots are taken
        assert (r.status_code, r.json()["refused"], r.json()["state"]) == (503, "breaker", "half_open")
        killed = kill_holders(gun, up, calls, PROBES)
        # Stuck as it would stay: both probe slots held by the dead, no
        # half_open_max_wait to reopen it.
        b = state(gun)["breaker"]
        assert (b["state"], b["half_open_in_flight"], b["permits_outstanding"]) == ("half_open", PROBES, PROBES)
        assert b["totals"]["ignored"] == 0
        assert_replaced(gun, killed)

        # The upstream heals. The first caller refused in half-open finds the
        # dead probes; callers get in as probes again and 2 successes close it.
        calls_before = up.calls
        answers = []
        t0 = time.monotonic()
        while answers.count(200) < PROBES:
            assert time.monotonic() - t0 < HEAL_BOUND, f"the breaker did not probe again: {len(answers)} refused"
            r = get(url)
            assert r.status_code == 200 or r.json() == {"refused": "breaker", "state": "half_open", "retry_after": None}
            answers.append(r.status_code)
            if r.status_code != 200:
                time.sleep(0.005)
        assert up.calls - calls_before == PROBES  # the probes reached the upstream again
        b = state(gun)["breaker"]
        assert (b["state"], b["half_open_in_flight"], b["permits_outstanding"]) == ("closed", 0, 0)
        t = b["totals"]
        # Hand-counted: 4 failures, 2 probes killed (given back as ignored), 2 probes that closed it;
        # closed -> open -> half_open -> closed.
        assert (t["admitted"], t["failures"], t["ignored"], t["successes"], t["transitions"]) == (8, 4, 2, 2, 3)
        assert [get(url).status_code for _ in range(3)] == [200] * 3  # closed: everyone gets through
        assert up.calls - calls_before == PROBES + 3


# -- (c) a whole restart ------------------------------------------------------


def test_a_service_started_again_after_its_workers_were_killed_finds_its_regions_whole(service):
    up = service.up
    with service.start() as gun:
        url = gun.url + "/call"
        # 2 callers killed while a slow upstream holds them: 2 permits (and the
        # breaker permits of 2 closed-state calls) leaked.
        up.hold()
        calls = Calls()
        for k in (1, 2):
            admit_next(up, url, calls, k, "bulkhead", HEAL_BOUND)
        kill_holders(gun, up, calls, 2)
        open_the_breaker(gun, up)  # one caller at a time: the 2 free permits are enough
        # The 2 probes take the last 2 permits. No third caller: refused by the
        # full bulkhead, it would look for dead holders and find the first 2.
        calls = take_the_probes(gun, up)
        kill_holders(gun, up, calls, PROBES)
        s = state(gun)
        assert s["bulkhead"] == held(LIMIT)  # every permit held by the dead
        b = s["breaker"]
        assert (b["state"], b["half_open_in_flight"], b["permits_outstanding"]) == ("half_open", PROBES, 2 + PROBES)
        old_master, old_workers = gun.master, gun.worker_pids()
    # Stopped whole: the master and every worker are gone.
    for pid in [old_master] + old_workers:
        assert proc_stat(pid) is None or proc_stat(pid)[0] in "ZX"

    with service.start() as gun:  # a new master opens the same regions
        url = gun.url + "/call"
        # Before any call: whole. The 4 dead breaker permits were given back as ignored.
        s = state(gun)
        assert s["bulkhead"] == EMPTY
        b = s["breaker"]
        assert (b["state"], b["half_open_in_flight"], b["permits_outstanding"]) == ("half_open", 0, 0)
        t = b["totals"]
        # Hand-counted: 2 closed calls + 4 failures + 2 probes admitted; 4 failures, 4 given back.
        assert (t["admitted"], t["failures"], t["ignored"], t["successes"]) == (8, 4, 4, 0)
        # Not stuck: 2 probes close it at once.
        assert [get(url).status_code for _ in range(PROBES)] == [200] * PROBES
        assert state(gun)["breaker"]["state"] == "closed"
        # And the bulkhead's full limit at once, no caller refused on the way.
        up.hold()
        up.reset_peak()
        calls = Calls()
        refusals = [admit_next(up, url, calls, k, "bulkhead", HEAL_BOUND) for k in range(1, LIMIT + 1)]
        assert refusals == [[]] * LIMIT
        r = get(url)
        assert (r.status_code, r.json()) == (503, {"refused": "bulkhead", "reason": "full"})
        assert up.peak == LIMIT
        up.release()
        assert [r.status_code for r in calls.join()] == [200] * LIMIT
        assert state(gun)["bulkhead"] == EMPTY


# -- a kill storm on a shared queue -------------------------------------------

STORM_RUNS = 12
KILLS_PER_RUN = 25
CHURNERS = 5

# A process that was not there: it opens the bulkhead, reads what it holds,
# then takes every permit it can and one more.
OPEN_AND_TAKE = """
import json, sys, seawall
sys.path.insert(0, sys.argv[2])
import _mp_workers
bh = seawall.Bulkhead(shared=sys.argv[1], **_mp_workers.STORM)
m = bh.metrics()
at_open = {k: m[k] for k in ("active", "queued", "permits_outstanding", "tickets_outstanding")}
taken = []
for _ in range(bh.max_concurrent):
    taken.append(bh.try_acquire())
try:
    bh.try_acquire()
    more = "admitted"
except seawall.BulkheadFullError as e:
    more = e.reason
print(json.dumps(dict(at_open=at_open, taken=len(taken), more=more, created=bh._native.created)))
"""


def occupancy(bh):
    m = bh.metrics()
    return {k: m[k] for k in EMPTY}


def test_a_kill_storm_on_a_shared_queue_leaves_it_whole_with_nobody_reclaiming():
    """Processes churning on the queue of a shared bulkhead (3 permits, 8
    places) with enqueue() tickets, waiting acquires and try_acquire are
    SIGKILLed at random moments and replaced, 25 times a run, then all at once.
    Once every one is dead, with no reclaim call: in even runs a new process
    opening the bulkhead finds active = queued = 0 and takes all 3 permits; in
    odd runs this process, which had it open all along (and held nothing),
    takes all 3 within the heal bound. Never a 4th."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["seawall", "_mp_workers"])
    rng = random.Random(0x5EA3A11)
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    left = []  # what the dead held at the end of each run, as this process read it
    refused = []  # odd runs: this process's try_acquire refused before the heal
    kills = 0

    def churner():
        p = ctx.Process(target=_mp_workers.queue_churn, args=(name, rng.getrandbits(32)), daemon=True)
        p.start()
        return p

    for run in range(STORM_RUNS):
        name = f"pytest-storm-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        watcher = seawall.Bulkhead(shared=name, **_mp_workers.STORM)
        assert watcher._native.created
        procs = []
        try:
            procs += [churner() for _ in range(CHURNERS)]
            for _ in range(KILLS_PER_RUN):
                time.sleep(rng.uniform(0.002, 0.03))
                i = rng.randrange(CHURNERS)
                procs[i].kill()
                procs[i].join(30)
                assert procs[i].exitcode == -9
                kills += 1
                procs[i] = churner()
            wait_for(lambda: watcher.active > 0, "the churners to take permits")
            for p in procs:
                p.kill()
            for p in procs:
                p.join(30)
                assert p.exitcode == -9
            kills += len(procs)
            left.append(occupancy(watcher))

            if run % 2 == 0:
                child = subprocess.run(
                    [sys.executable, "-c", OPEN_AND_TAKE, name, tests_dir], capture_output=True, text=True, timeout=60
                )
                assert (child.returncode, child.stderr) == (0, "")
                assert json.loads(child.stdout) == dict(at_open=EMPTY, taken=3, more="full", created=False)
            else:
                taken, refusals = [], 0
                t0 = time.monotonic()
                while len(taken) < watcher.max_concurrent:
                    try:
                        taken.append(watcher.try_acquire())
                    except seawall.BulkheadFullError:
                        refusals += 1
                        assert time.monotonic() - t0 < HEAL_BOUND, f"only {len(taken)} permits: {occupancy(watcher)}"
                        time.sleep(0.005)
                refused.append(refusals)
                with pytest.raises(seawall.BulkheadFullError) as e:
                    watcher.try_acquire()
                assert e.value.reason == "full"
                assert occupancy(watcher) == dict(EMPTY, active=3, permits_outstanding=3)
                for p in taken:
                    p.release()
            assert occupancy(watcher) == EMPTY
        finally:
            for p in procs:  # on a failure too: they never stop by themselves
                if p.exitcode is None:
                    p.kill()
                    p.join(30)
            seawall.Bulkhead.unlink_shared(name)
    # The storm did leave the dead holding permits or places for the healing to give back.
    assert any(x["active"] + x["queued"] > 0 for x in left), left
    print(f"kill storm: {kills} kills; held by the dead at the end of each run: {left}; "
          f"refused before the heal (odd runs): {refused}")
