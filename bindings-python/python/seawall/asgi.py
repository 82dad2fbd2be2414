"""ASGI middleware (Starlette, FastAPI, any ASGI 3 application; plain ASGI, no
framework imported): priority load shedding at the door, a health endpoint and
a per-request deadline.

    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    import seawall
    from seawall.asgi import SeawallMiddleware

    pool = seawall.Bulkhead(64, shares={"critical": 100, "high": 80, "normal": 50, "low": 20})
    app = Starlette(routes=..., middleware=[Middleware(
        SeawallMiddleware,
        bulkhead=pool,
        get_priority=seawall.priority_by_path({"/payments": "high", "/reports": "low"}),
        health={"inventory": [inventory_breaker, inventory_health]},
    )])

Per HTTP request (``lifespan`` and ``websocket`` pass through untouched):

1. ``health_path`` (default ``/health``), when ``health`` is given, is answered
   here with the :class:`~seawall.HealthReport` document (JSON; 200, or 503
   when unhealthy), holding no permit, so a probe sees the truth when the
   service is full.
2. The ``deadline_header`` (default ``x-request-deadline-ms``: the caller's
   budget in milliseconds), when present, becomes a :class:`~seawall.Deadline`
   that is the :func:`~seawall.current_deadline` of the handler: retries never
   sleep past it, a policy's timeout is cut to it, a chaos latency or hang ends
   at it, a bulkhead's queue wait ends at it. The value takes the Node
   middleware's grammar: decimal digits with an optional fraction (``250``,
   ``0.5``; no sign, exponent or ``_``), a number > 0, finite as a float,
   whitespace around it allowed; anything else (``0``, ``1e3``, ``-5``) is
   answered 400 with Node's JSON body ``{"error": "invalid
   x-request-deadline-ms: must be a number of milliseconds greater than 0,
   not \"1e3\""}``. A repeated header is one value joined by ``", "`` (400).
3. With a ``bulkhead``, the request takes a permit at ``get_priority(scope)``
   (default: the bulkhead's ``priority``) for as long as the application runs,
   waiting in the bulkhead's queue if it has one (at most ``queue_timeout``,
   and not past the request's deadline); a request shed by its
   priority's share is refused at once, never queued (DESIGN §5). A refusal
   (shed, full, or a queue wait that timed out) is answered 503 with
   ``Retry-After: retry_after`` (seconds, rounded up) and a JSON body
   ``{"error": "overloaded", "reason": "shed" | "full" | "timeout", "active", "queued"}``.
4. A client that disconnects before its response is complete gives its
   permit back at once and its application is cancelled (``CancelledError``
   at its next ``await``; ``receive`` then says ``http.disconnect``), so a
   hanging handler neither keeps a permit nor holds up the server's graceful
   shutdown. The application runs as a task for this, and its ``receive`` is
   fed by a reader of the server's that stays one message ahead at most: a
   request body the application leaves unread is not buffered, and while
   the body is still arriving and the application does not read it, the
   disconnect is seen only once it reads on or returns. A disconnect after the response is
   complete (background work) cancels nothing; the permit is held until the
   application returns, as it always is. The Node middleware gives the
   permit back when the response closes and aborts the handler's
   ``AbortSignal`` (JavaScript cannot cancel the handler, which runs on);
   unlike it, a client gone while its request waits in the bulkhead's queue
   is noticed only once it has the permit (then given back at once), and a
   sync endpoint that Starlette runs in a thread runs to its end (a thread
   cannot be interrupted), its permit already back.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from typing import Any, Awaitable, Callable, List, Mapping, MutableMapping, Optional, Tuple, Union

from ._bulkhead import Bulkhead
from ._deadline import Deadline
from ._errors import BulkheadFullError
from ._middleware import JSON, Gate, HealthReport, Sources, parse_deadline_ms

__all__ = ["SeawallMiddleware"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def _answer(send: Send, status: int, headers: List[Tuple[str, str]], body: bytes) -> None:
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        + [(b"content-length", str(len(body)).encode())],
    })
    await send({"type": "http.response.body", "body": body})


class _Receiver:
    """The application's ``receive``, fed through a queue of one message by a
    reader of the server's. Once the request's body is complete the reader
    waits in the server's ``receive`` while the application is busy
    elsewhere, so it sees ``http.disconnect`` even when the application never
    asks again; before that it reads a body chunk only once the application
    has taken the one before (one message ahead at most: a body the
    application does not read is not buffered). Once the server has said all
    it will (a disconnect, or its ``receive`` raised), every later
    ``receive`` gets that again, as the server's own would."""

    def __init__(self, receive: Receive, on_disconnect: Callable[[], None]) -> None:
        self._receive = receive
        self._on_disconnect = on_disconnect
        self._queue: "asyncio.Queue[Union[Message, Exception]]" = asyncio.Queue(1)

    async def read(self) -> None:
        last: Union[Message, Exception]
        while True:
            try:
                message = await self._receive()
            except Exception as e:
                last = e
                break
            if message.get("type") == "http.disconnect":
                last = message
                self._on_disconnect()
                break
            await self._queue.put(message)
            if message.get("more_body", False):
                await self._queue.join()  # taken by the application
        while True:
            await self._queue.put(last)

    async def receive(self) -> Message:
        item = await self._queue.get()
        self._queue.task_done()
        if isinstance(item, Exception):
            raise item
        return item


def _ends_response(message: Message) -> bool:
    kind = message.get("type")
    if kind in ("http.response.body", "http.response.zerocopysend"):
        return not message.get("more_body", False)
    return kind == "http.response.pathsend"


async def _run_holding(app: ASGIApp, scope: Scope, receive: Receive, send: Send, permit: Any) -> None:
    """Run ``app`` as a task holding ``permit``, given back exactly once: when
    the app returns or raises, or at once when the client disconnects before
    its response is complete, which also cancels the app (its response can
    reach no one; a disconnect after it, e.g. during background work, cancels
    nothing and the permit is held until the app returns, as without one)."""
    released = False
    responded = False
    client_gone = False

    def release() -> None:
        nonlocal released
        if not released:
            released = True
            permit.release()

    async def app_send(message: Message) -> None:
        nonlocal responded
        if _ends_response(message):
            responded = True
        await send(message)

    def on_disconnect() -> None:
        nonlocal client_gone
        if responded or task.done():
            return
        client_gone = True
        release()
        task.cancel()

    receiver = _Receiver(receive, on_disconnect)
    # Both tasks copy this context: the app runs under the request's deadline.
    task = asyncio.ensure_future(app(scope, receiver.receive, app_send))
    reader = asyncio.ensure_future(receiver.read())
    try:
        try:
            # Waiting on the set, not the task: a CancelledError here is a
            # cancel of this middleware's own task (on every Python version,
            # without Task.cancelling), never the app's.
            await asyncio.wait({task})
        except asyncio.CancelledError:
            # As awaiting the task would: the cancel reaches the app, which
            # ends first, and goes on, even if the client left meanwhile.
            task.cancel()
            await asyncio.wait({task})
            raise
        if task.cancelled() and client_gone:
            # Our own cancel (the client went away) is no error of the request's.
            return
        task.result()
    finally:
        # Given back before anything else can run (as when the app ran in
        # this task): a client that saw its response may ask again at once.
        release()
        reader.cancel()
        await asyncio.wait({reader})


class SeawallMiddleware:
    """See the module's documentation."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        bulkhead: Optional[Bulkhead] = None,
        get_priority: Optional[Callable[[Any], str]] = None,
        health: Union[HealthReport, Mapping[str, Sources], None] = None,
        health_path: str = "/health",
        deadline_header: Optional[str] = "x-request-deadline-ms",
        retry_after: Union[float, datetime.timedelta] = 1.0,
    ) -> None:
        self.app = app
        self._gate = Gate(bulkhead=bulkhead, get_priority=get_priority, health=health,
                          health_path=health_path, deadline_header=deadline_header,
                          retry_after=retry_after)

    def _deadline_value(self, scope: Scope) -> Optional[str]:
        name = self._gate.deadline_header
        if name is None:
            return None
        wanted = name.encode("latin-1")
        values = [bytes(v).decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == wanted]
        # A repeated header is one value joined by ", ", as Node (and a WSGI
        # server) gives it, so both packages answer it alike (400).
        return ", ".join(values) if values else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gate = self._gate
        if gate.health is not None and scope.get("path") == gate.health_path:
            status, body = gate.health.answer()
            await _answer(send, status, JSON, body)
            return
        raw = self._deadline_value(scope)
        seconds = None
        if raw is not None:
            seconds = parse_deadline_ms(raw)
            if seconds is None:
                await _answer(send, *gate.bad_deadline(raw))
                return
        with Deadline(seconds) if seconds is not None else contextlib.nullcontext():
            permit = None
            if gate.bulkhead is not None:
                try:
                    permit = await gate.bulkhead.acquire_async(gate.priority(scope))
                except BulkheadFullError as e:
                    await _answer(send, *gate.refused(e))
                    return
            if permit is None:
                await self.app(scope, receive, send)
            else:
                await _run_holding(self.app, scope, receive, send, permit)
