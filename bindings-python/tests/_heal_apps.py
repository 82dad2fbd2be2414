"""The service test_self_healing.py runs under gunicorn: a FastAPI app (uvicorn
workers) and a Flask app (sync workers), each answering GET /call by calling
the test's loopback upstream (SEAWALL_TEST_UPSTREAM) through one shared
bulkhead and, inside it, one shared breaker, both in the regions named
SEAWALL_TEST_REGION. GET /state tells what the regions hold, read without
changing them (no acquire: reading heals nothing).

gunicorn --preload builds the app in its master (`make_fastapi()` /
`make_flask()`): the regions are opened there once, and every worker, those
gunicorn forks again after a kill included, uses them as they are, so a
worker never reopens a region: whatever dead workers held comes back through
the callers that need it. Nothing here calls reclaim_abandoned()."""

import os

import seawall

# Limits the test works with by hand: 4 permits, no queue (a fifth caller is
# refused at once); 4 calls in a count window of 4, half of them failures,
# open the breaker for 0.2 s; then 2 probes at once, and 2 successes close it.
# No half_open_max_wait: a half-open breaker whose probes died stays stuck
# unless their slots come back.
BULKHEAD = dict(max_concurrent=4, max_queue=0)
BREAKER = dict(
    window=seawall.CountWindow(4),
    minimum_calls=4,
    failure_rate_threshold=50.0,
    open_duration=0.2,
    open_jitter_factor=0.0,
    half_open_max_calls=2,
    half_open_success_threshold=2,
    half_open_max_wait=None,
)


def _regions():
    region = os.environ["SEAWALL_TEST_REGION"]
    return seawall.Bulkhead(shared=region, **BULKHEAD), seawall.CircuitBreaker(shared=region, **BREAKER)


def _state(bulkhead, breaker):
    b, m = bulkhead.metrics(), breaker.metrics()
    return {
        "pid": os.getpid(),
        "bulkhead": {k: b[k] for k in ("active", "queued", "permits_outstanding", "tickets_outstanding")},
        "breaker": {
            "state": m["state"],
            "half_open_in_flight": m["half_open_in_flight"],
            "permits_outstanding": m["permits_outstanding"],
            "totals": m["totals"],
        },
    }


def _refused_by_bulkhead(e):
    return {"refused": "bulkhead", "reason": e.reason}


def _refused_by_breaker(breaker):
    return {"refused": "breaker", "state": breaker.state.value, "retry_after": breaker.retry_after}


def make_fastapi():
    import httpx
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    bulkhead, breaker = _regions()
    upstream = os.environ["SEAWALL_TEST_UPSTREAM"]
    clients = {}  # one client per worker, made on its event loop

    app = FastAPI()

    @app.get("/call")
    async def call():
        client = clients.get(os.getpid())
        if client is None:
            client = clients[os.getpid()] = httpx.AsyncClient(timeout=120.0)
        try:
            async with bulkhead:
                try:
                    async with breaker:
                        r = await client.get(upstream, headers={"x-worker-pid": str(os.getpid())})
                        r.raise_for_status()
                except seawall.CircuitOpenError:
                    return JSONResponse(_refused_by_breaker(breaker), 503)
        except seawall.BulkheadFullError as e:
            return JSONResponse(_refused_by_bulkhead(e), 503)
        except httpx.HTTPStatusError as e:
            return JSONResponse({"upstream": e.response.status_code}, 502)
        return {"pid": os.getpid()}

    @app.get("/state")
    async def state():
        return _state(bulkhead, breaker)

    return app


def make_flask():
    import httpx
    from flask import Flask

    bulkhead, breaker = _regions()
    upstream = os.environ["SEAWALL_TEST_UPSTREAM"]
    clients = {}  # one client per worker (a sync worker serves one request at a time)

    app = Flask(__name__)

    @app.get("/call")
    def call():
        client = clients.get(os.getpid())
        if client is None:
            client = clients[os.getpid()] = httpx.Client(timeout=120.0)
        try:
            with bulkhead:
                try:
                    with breaker:
                        r = client.get(upstream, headers={"x-worker-pid": str(os.getpid())})
                        r.raise_for_status()
                except seawall.CircuitOpenError:
                    return _refused_by_breaker(breaker), 503
        except seawall.BulkheadFullError as e:
            return _refused_by_bulkhead(e), 503
        except httpx.HTTPStatusError as e:
            return {"upstream": e.response.status_code}, 502
        return {"pid": os.getpid()}

    @app.get("/state")
    def state():
        return _state(bulkhead, breaker)

    return app
