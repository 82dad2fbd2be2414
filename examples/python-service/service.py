"""A product-details service on Starlette + uvicorn, protected by seawall: the
stock of each product comes from an inventory dependency over HTTP (httpx),
through seawall's full pipeline in DESIGN §9 order, the same settings as the
gameday's built-in protected service (gameday/src/settings.rs):

    stale-cache fallback -> bulkhead (60, priority shares) -> circuit breaker
    -> retry (3 attempts, budget) -> 400 ms attempt timeout, within a 1 s
    per-request deadline

``GET /products/{id}`` answers ``{"id", "stock", "as_of_ms", "source",
"degraded"}`` (``source``: ``primary`` or ``stale-cache``), or 503 when the
dependency failed and nothing is cached for the id. ``GET /metrics`` exports the
breaker, bulkhead and retry in Prometheus text (``seawall.prometheus``).

    python examples/python-service/service.py --upstream http://127.0.0.1:9900 [--port 0]

The first line printed names the URL (``--port 0``: an ephemeral port); SIGTERM
or Ctrl-C stops it cleanly. The gameday runs against it through its
fault-injecting proxy (gameday/README.md, "Against your own service").
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
from typing import Any, AsyncIterator, Dict, Optional

import httpx
import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import seawall
from seawall.prometheus import SeawallCollector

#: The whole pipeline ends within this (seconds), whatever the dependency does.
DEADLINE = 1.0


class Inventory:
    """The dependency and the pipeline around it."""

    def __init__(self, upstream: str) -> None:
        self.client = httpx.AsyncClient(
            base_url=upstream,
            # The pipeline's timeouts bound each call; this only guards the pool.
            timeout=10.0,
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=100),
        )
        self.breaker = seawall.CircuitBreaker(
            name="inventory",
            window=seawall.TimeWindow(2.0, buckets=10),
            minimum_calls=20,
            failure_rate_threshold=25.0,
            slow_call_duration=0.5,
            slow_call_rate_threshold=50.0,
            open_duration=1.0,
            max_open_duration=1.0,
            half_open_max_calls=2,
            half_open_success_threshold=2,
        )
        self.bulkhead = seawall.Bulkhead(
            60,
            16,
            queue_timeout=0.1,
            shares={"critical": 100, "high": 80, "normal": 50, "low": 20},
            name="inventory",
        )
        self.retry = seawall.Retry(
            attempts=3,
            backoff=seawall.Backoff(base=0.02, multiplier=2.0, max=0.2, jitter="full"),
            budget=seawall.RetryBudget(2.0, 5, 20.0, name="inventory"),
            name="inventory",
        )
        self.policy = seawall.Policy(
            fallback=seawall.fallback(seawall.StaleCache(max_stale=600.0)),
            bulkhead=self.bulkhead,
            breaker=self.breaker,
            retry=self.retry,
            timeout=0.4,
        )

    async def fetch(self, product_id: int) -> Optional[Dict[str, Any]]:
        """The inventory record, ``None`` for an unknown product (a 404 is an
        answer: the dependency works); any other failure raises."""
        r = await self.client.get(f"/inventory/{product_id}")
        if r.status_code == 404:
            return None
        r.raise_for_status()
        record: Dict[str, Any] = r.json()
        return record


def build_app(upstream: str) -> Starlette:
    inventory = Inventory(upstream)
    registry = CollectorRegistry()
    registry.register(SeawallCollector(inventory.breaker, inventory.bulkhead, inventory.retry))

    async def product(request: Request) -> Response:
        product_id: int = request.path_params["id"]
        try:
            with seawall.Deadline(DEADLINE):
                result = await inventory.policy.execute_async(inventory.fetch, product_id)
        except Exception as e:  # nothing cached for the id: the one unserved case
            return JSONResponse({"error": f"inventory unavailable: {type(e).__name__}"}, status_code=503)
        if result.value is None:
            return JSONResponse({"error": f"no product {product_id}"}, status_code=404)
        record = result.value
        return JSONResponse(
            {
                "id": product_id,
                "stock": record.get("stock"),
                "as_of_ms": record.get("as_of_ms"),
                "source": result.source,
                "degraded": result.degraded,
            }
        )

    async def metrics(request: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await inventory.client.aclose()

    return Starlette(
        routes=[Route("/products/{id:int}", product), Route("/metrics", metrics)],
        lifespan=lifespan,
    )


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", required=True, help="the inventory dependency, http://host:port")
    ap.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0: ephemeral)")
    args = ap.parse_args(argv)
    # Bound here, so the port is known (and printed) before the server starts.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: uvicorn writes a response's head and body
    # apart, and with Nagle's algorithm the body would wait for the client's
    # delayed ACK (40 ms on Linux) on every answer.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(1024)
    port = sock.getsockname()[1]
    print(f"product details on http://127.0.0.1:{port}/products/1 (inventory: {args.upstream})", flush=True)
    config = uvicorn.Config(build_app(args.upstream.rstrip("/")), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
