"""The ASGI middleware under uvicorn (a Starlette application) and the WSGI
middleware under wsgiref, over real loopback connections made with httpx:
priority load shedding (DESIGN §5 limits worked by hand), the health endpoint,
and the per-request deadline that the policies inside the handler honour."""

import asyncio
import json
import threading
import time

import pytest

import seawall
from seawall.wsgi import SeawallMiddleware as WSGIMiddleware
from _servers import uvicorn_server, wsgi_server

httpx = pytest.importorskip("httpx")

# max_concurrent 4 with the seed documents' shares: limits max(1, floor(4·s/100)):
# critical 4, high 3 (3.2), normal 2, low 1 (0.8, raised to 1).
SHARES = {"critical": 100, "high": 80, "normal": 50, "low": 20}
ROUTES = {"/admin": "critical", "/payments": "high", "/reports": "low"}


def wait_until(cond, seconds=20.0):
    end = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.002)


class Held:
    """Requests to /…/hold block in the handler until released."""

    def __init__(self):
        self.release = threading.Event()
        self.inside = 0
        self.lock = threading.Lock()

    def enter(self):
        with self.lock:
            self.inside += 1


def in_thread(url, results, headers=None):
    def run():
        with httpx.Client(timeout=30) as c:
            results.append(c.get(url, headers=headers or {}))

    t = threading.Thread(target=run)
    t.start()
    return t


def shedding_scenario(base, held, pool):
    """One scenario for both servers: the limits above, request by request."""
    threads, done = [], []

    def hold(path):
        before = held.inside
        threads.append(in_thread(base + path, done))
        wait_until(lambda: held.inside == before + 1)

    with httpx.Client(timeout=30) as c:
        hold("/reports/hold")  # low 1/1
        r = c.get(base + "/reports/hold")
        assert r.status_code == 503 and r.headers["retry-after"] == "2"
        assert r.json() == {"error": "overloaded", "reason": "shed", "active": 1, "queued": 0}
        hold("/hold")  # normal 2/2
        assert c.get(base + "/hold").json()["reason"] == "shed"
        hold("/payments/hold")  # high 3/3
        assert c.get(base + "/payments/x").json()["reason"] == "shed"
        hold("/admin/hold")  # critical 4/4: the bulkhead is full
        r = c.get(base + "/admin/hold")
        assert r.status_code == 503 and r.json()["reason"] == "full"
        assert (pool.active, pool.queued) == (4, 0)
        m = pool.metrics()
        assert (m["rejected_shed"], m["rejected_full"]) == (3, 1)
        held.release.set()
        for t in threads:
            t.join(30)
        assert [r.status_code for r in done] == [200] * 4
        wait_until(lambda: pool.active == 0)
        assert c.get(base + "/reports/x").status_code == 200


# -- ASGI -------------------------------------------------------------------

starlette = pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
from starlette.applications import Starlette  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from seawall.asgi import SeawallMiddleware as ASGIMiddleware  # noqa: E402


def starlette_app(held, **options):
    async def hold(request):
        held.enter()
        while not held.release.is_set():
            await asyncio.sleep(0.002)
        return JSONResponse({"ok": True})

    async def ok(request):
        return JSONResponse({"ok": True})

    def deadline_sync(request):  # a sync endpoint: Starlette runs it in a worker thread
        d = seawall.current_deadline()
        return JSONResponse({"remaining": None if d is None else d.remaining()})

    async def deadline_async(request):
        d = seawall.current_deadline()
        return JSONResponse({"remaining": None if d is None else d.remaining()})

    inventory = seawall.chaos("inventory", enabled=True, hang=True)

    @inventory
    async def call_inventory():
        return "never"

    async def chaos_hang(request):
        try:
            await call_inventory()
        except seawall.DeadlineExceededError as e:
            return JSONResponse({"error": str(e)}, status_code=504)
        return JSONResponse({})

    attempts = []

    @seawall.Retry(attempts=10, backoff=seawall.Backoff(base=5.0, jitter="none"))
    async def flaky():
        attempts.append(1)
        raise OSError("down")

    async def retried(request):
        attempts.clear()
        try:
            await flaky()
        except OSError:
            pass
        return JSONResponse({"attempts": len(attempts)})

    routes = [Route(p, hold) for p in ("/hold", "/reports/hold", "/payments/hold", "/admin/hold")]
    routes += [Route(p, ok) for p in ("/reports/x", "/payments/x", "/x")]
    routes += [Route("/deadline/sync", deadline_sync), Route("/deadline/async", deadline_async),
               Route("/chaos", chaos_hang), Route("/retried", retried)]
    return Starlette(routes=routes, middleware=[Middleware(ASGIMiddleware, **options)])


def test_asgi_sheds_by_priority_and_answers_503_with_retry_after():
    held = Held()
    pool = seawall.Bulkhead(4, 0, shares=SHARES)
    app = starlette_app(held, bulkhead=pool, get_priority=seawall.priority_by_path(ROUTES), retry_after=1.5)
    with uvicorn_server(app) as base:
        shedding_scenario(base, held, pool)


def test_asgi_never_queues_a_shed_request_but_queues_one_within_its_share():
    # max 2, queue 1, low 50 % → low limit 1; normal keeps 100 % → limit 2.
    held = Held()
    pool = seawall.Bulkhead(2, 1, shares={"low": 50})
    app = starlette_app(held, bulkhead=pool, get_priority=seawall.priority_by_path(ROUTES))
    with uvicorn_server(app) as base, httpx.Client(timeout=30) as c:
        done = []
        threads = [in_thread(base + "/reports/hold", done)]
        wait_until(lambda: held.inside == 1)
        r = c.get(base + "/reports/x")
        assert r.json()["reason"] == "shed" and r.headers["retry-after"] == "1"
        assert pool.queued == 0
        threads.append(in_thread(base + "/hold", done))
        wait_until(lambda: held.inside == 2)
        threads.append(in_thread(base + "/x", done))  # normal, at the limit of all: waits
        wait_until(lambda: pool.queued == 1)
        assert c.get(base + "/x").json()["reason"] == "full"  # the queue of 1 is taken
        held.release.set()
        for t in threads:
            t.join(30)
        assert sorted(r.status_code for r in done) == [200, 200, 200]
        wait_until(lambda: (pool.active, pool.queued) == (0, 0))


def test_asgi_health_endpoint_from_breakers_and_health_windows():
    breaker = seawall.CircuitBreaker(name="inventory-breaker")
    clock = [0.0]
    health = seawall.Health(clock=lambda: clock[0])
    app = starlette_app(Held(), health={"inventory": [breaker, health], "payments": seawall.CircuitBreaker()})
    with uvicorn_server(app) as base, httpx.Client(timeout=30) as c:
        r = c.get(base + "/health")
        assert r.status_code == 200 and r.json()["status"] == "healthy"
        assert r.headers["cache-control"] == "no-store"
        # 1 error in 5 calls: 20 % > 10 % is degraded (DESIGN §7), still served.
        for failed in (True, False, False, False, False):
            health.record(0.01, failed)
        r = c.get(base + "/health")
        assert r.status_code == 200
        doc = r.json()
        assert doc["status"] == "degraded"
        inv = doc["dependencies"]["inventory"]
        assert inv["status"] == "degraded" and inv["breakers"] == {"inventory-breaker": "closed"}
        assert inv["health"][0]["error_rate"] == 20.0
        assert doc["dependencies"]["payments"]["status"] == "healthy"
        breaker.force_open()
        r = c.get(base + "/health")
        assert r.status_code == 503
        assert r.json()["dependencies"]["inventory"] == {
            "status": "unhealthy", "breakers": {"inventory-breaker": "forced_open"},
            "health": [health.snapshot()],
        }
        breaker.reset()
        assert c.get(base + "/health").status_code == 200


def test_asgi_request_deadline_reaches_sync_and_async_handlers_and_policies():
    app = starlette_app(Held())
    with uvicorn_server(app) as base, httpx.Client(timeout=30) as c:
        h = {"x-request-deadline-ms": "5000"}
        for path in ("/deadline/sync", "/deadline/async"):
            assert 0 < c.get(base + path, headers=h).json()["remaining"] <= 5.0
            assert c.get(base + path).json()["remaining"] is None
        r = c.get(base + "/deadline/async", headers={"x-request-deadline-ms": "soon"})
        assert r.status_code == 400 and "x-request-deadline-ms" in r.json()["error"]
        assert c.get(base + "/deadline/async", headers={"x-request-deadline-ms": "-1"}).status_code == 400
        # A chaos hang ends at the request's deadline, not never.
        r = c.get(base + "/chaos", headers={"x-request-deadline-ms": "50"})
        assert r.status_code == 504 and "outlasted the deadline" in r.json()["error"]
        # A retry 5 s later would end past a 200 ms deadline: it is not made.
        assert c.get(base + "/retried", headers={"x-request-deadline-ms": "200"}).json() == {"attempts": 1}


def test_asgi_passes_lifespan_and_other_scopes_through():
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    mw = ASGIMiddleware(app, bulkhead=seawall.Bulkhead(1))
    asyncio.run(mw({"type": "lifespan"}, None, None))
    assert seen == ["lifespan"]


# -- WSGI -------------------------------------------------------------------


def wsgi_app(held):
    def app(environ, start_response):
        path = environ["PATH_INFO"]
        if path.endswith("/hold"):
            held.enter()
            held.release.wait(30)
        if path == "/deadline":
            d = seawall.current_deadline()
            body = b"none" if d is None else str(d.remaining()).encode()
            start_response("200 OK", [("content-type", "text/plain")])
            return [body]
        if path == "/stream":
            def chunks():
                for i in range(3):
                    d = seawall.current_deadline()
                    yield b"%d:%s;" % (i, b"none" if d is None else b"deadline")
                    if i == 0:
                        held.enter()
                        held.release.wait(30)
            start_response("200 OK", [("content-type", "text/plain")])
            return chunks()
        start_response("200 OK", [("content-type", "text/plain")])
        return [b"ok"]

    return app


def test_wsgi_sheds_by_priority_and_answers_503_with_retry_after():
    held = Held()
    pool = seawall.Bulkhead(4, 0, shares=SHARES)
    app = WSGIMiddleware(wsgi_app(held), bulkhead=pool, get_priority=seawall.priority_by_path(ROUTES),
                         retry_after=1.5)
    with wsgi_server(app) as base:
        shedding_scenario(base, held, pool)


def test_wsgi_health_and_deadline():
    breaker = seawall.CircuitBreaker(name="inv")
    app = WSGIMiddleware(wsgi_app(Held()), health={"inventory": breaker})
    with wsgi_server(app) as base, httpx.Client(timeout=30) as c:
        assert c.get(base + "/health").json() == {
            "status": "healthy", "dependencies": {"inventory": {"breakers": {"inv": "closed"}, "status": "healthy"}}}
        breaker.force_open()
        r = c.get(base + "/health")
        assert r.status_code == 503 and r.json()["status"] == "unhealthy"
        assert 0 < float(c.get(base + "/deadline", headers={"x-request-deadline-ms": "3000"}).text) <= 3.0
        assert c.get(base + "/deadline").text == "none"
        assert c.get(base + "/deadline", headers={"x-request-deadline-ms": "x"}).status_code == 400


def test_wsgi_streamed_body_holds_its_permit_and_deadline_until_closed():
    held = Held()
    pool = seawall.Bulkhead(1)
    app = WSGIMiddleware(wsgi_app(held), bulkhead=pool)
    with wsgi_server(app) as base, httpx.Client(timeout=30) as c:
        done = []
        t = in_thread(base + "/stream", done, headers={"x-request-deadline-ms": "30000"})
        wait_until(lambda: held.inside == 1)  # the first chunk is made, the body not finished
        assert pool.active == 1
        assert c.get(base + "/x").json()["reason"] == "full"
        held.release.set()
        t.join(30)
        assert done[0].text == "0:deadline;1:deadline;2:deadline;"
        wait_until(lambda: pool.active == 0)
        assert c.get(base + "/x").text == "ok"


def test_priority_by_path_matches_whole_segments_and_checks_priorities():
    gp = seawall.priority_by_path(ROUTES, default="normal")
    assert [gp(p) for p in ("/payments", "/payments/1", "/paymentsx", "/admin", "/")] == [
        "high", "high", "normal", "critical", "normal"]
    assert gp({"path": "/reports/q"}) == "low" and gp({"PATH_INFO": "/reports"}) == "low"
    with pytest.raises(seawall.SeawallConfigError) as e:
        seawall.priority_by_path({"/x": "urgent"})
    assert e.value.field == "routes"
    with pytest.raises(seawall.SeawallConfigError):
        WSGIMiddleware(wsgi_app(Held()), retry_after=-1)


# -- the current deadline bounds a bulkhead's queue wait ---------------------


def test_a_queued_wait_ends_at_the_current_deadline():
    # queue_timeout 5 s: without the deadline each wait below would last 5 s.
    pool = seawall.Bulkhead(1, 1, queue_timeout=5)
    held = pool.acquire()

    @pool
    def decorated():  # the native sync path
        return 1

    async def waits():
        with seawall.Deadline(0.05):
            await pool.acquire_async()

    try:
        for wait in (pool.acquire, decorated, lambda: asyncio.run(waits())):
            t0 = time.monotonic()
            with seawall.Deadline(0.05), pytest.raises(seawall.BulkheadFullError) as e:
                wait()
            assert e.value.reason == "timeout"
            assert time.monotonic() - t0 < 4
            assert pool.queued == 0
    finally:
        held.release()
    assert pool.active == 0


def test_asgi_request_deadline_bounds_the_wait_at_the_door():
    held = Held()
    pool = seawall.Bulkhead(1, 1, queue_timeout=5)
    app = starlette_app(held, bulkhead=pool)
    with uvicorn_server(app) as base, httpx.Client(timeout=30) as c:
        done = []
        t = in_thread(base + "/hold", done)
        wait_until(lambda: held.inside == 1)
        t0 = time.monotonic()
        r = c.get(base + "/x", headers={"x-request-deadline-ms": "50"})
        assert time.monotonic() - t0 < 4
        assert r.status_code == 503 and r.json()["reason"] == "timeout"
        held.release.set()
        t.join(30)
        assert done[0].status_code == 200


# -- the seed documents' game day, over HTTP --------------------------------


def test_game_day_through_a_rules_file_against_a_starlette_service(tmp_path):
    """Latency within the timeout, latency past it, every call failing, then the
    rules off: the responses say what the policies did (DESIGN §9, §11)."""
    rules_path = tmp_path / "chaos.json"
    rules = seawall.chaos.load(rules_path, poll_interval=None)  # no file yet: no rules
    # Count window 4, minimum 4, 50 %: the fourth failure in a row opens it.
    breaker = seawall.CircuitBreaker(window=seawall.CountWindow(4), minimum_calls=4, open_duration=0.5)
    policy = seawall.wrap(seawall.fallback(seawall.StaleCache()), breaker, 0.2,
                          seawall.chaos.for_dependency("gameday-inventory"))

    async def fetch(sku):
        return {"sku": sku, "count": 3}

    async def stock(request):
        r = await policy.execute_async(fetch, request.path_params["sku"])
        return JSONResponse({"source": r.source, "count": r.value["count"],
                             "error": type(r.error).__name__ if r.error else None})

    def set_rules(obj):
        rules_path.write_text(json.dumps({"gameday-inventory": obj}))
        assert rules.reload() is True

    app = Starlette(routes=[Route("/stock/{sku}", stock)], middleware=[Middleware(
        ASGIMiddleware, health={"inventory": breaker})])
    try:
        with uvicorn_server(app) as base, httpx.Client(timeout=30) as c:
            get = lambda: c.get(base + "/stock/A1").json()  # noqa: E731
            assert get() == {"source": "primary", "count": 3, "error": None}
            set_rules({"enabled": True, "latencyMs": 10})
            assert get()["source"] == "primary"
            set_rules({"enabled": True, "latencyMs": 2000})
            t0 = time.monotonic()
            assert get() == {"source": "stale-cache", "count": 3, "error": "DeadlineExceededError"}
            assert time.monotonic() - t0 < 1.9
            set_rules({"enabled": True, "failureRate": 1.0})
            # The window holds S, S, F (the timeout): the first injected failure
            # makes 4 calls with 2 failures, 50 %, and opens it.
            assert get() == {"source": "stale-cache", "count": 3, "error": "ChaosError"}
            assert breaker.state == "open"
            assert c.get(base + "/health").status_code == 503
            assert get() == {"source": "stale-cache", "count": 3, "error": "CircuitOpenError"}
            set_rules({"enabled": False})  # over: the breaker probes after 0.5 s and closes
            wait_until(lambda: get()["source"] == "primary")
            assert breaker.state == "closed"
            assert c.get(base + "/health").status_code == 200
    finally:
        rules.close()
        seawall.chaos.reset()
