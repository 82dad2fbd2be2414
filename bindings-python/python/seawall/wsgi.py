"""WSGI middleware (Flask, Django, Bottle, any PEP 3333 application; standard
library only): priority load shedding at the door, a health endpoint and a
per-request deadline, as :mod:`seawall.asgi` does for ASGI.

    import seawall
    from seawall.wsgi import SeawallMiddleware

    pool = seawall.Bulkhead(16, shares={"critical": 100, "high": 80, "normal": 50, "low": 20})
    app.wsgi_app = SeawallMiddleware(app.wsgi_app, bulkhead=pool,
                                     get_priority=seawall.priority_by_path({"/payments": "high"}),
                                     health={"inventory": inventory_breaker})

The same three steps as :mod:`seawall.asgi`, with ``get_priority(environ)``.
The worker thread waits for a permit (GIL released) when the bulkhead has a
queue. The permit is held until the server closes the response iterable
(PEP 3333 ``close()``), so a streamed body counts as in flight until it is
sent; the request's deadline is the current one while the application is
called and while each chunk of its body is made.
"""

from __future__ import annotations

import contextlib
import datetime
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

from ._bulkhead import Bulkhead
from ._deadline import Deadline
from ._errors import BulkheadFullError
from ._middleware import JSON, Gate, HealthReport, Sources, parse_deadline_ms

__all__ = ["SeawallMiddleware"]

Environ = Dict[str, Any]
StartResponse = Callable[..., Any]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]

_REASONS = {200: "OK", 400: "Bad Request", 503: "Service Unavailable"}


def _answer(start_response: StartResponse, status: int, headers: List[Tuple[str, str]], body: bytes) -> List[bytes]:
    start_response(f"{status} {_REASONS[status]}", [*headers, ("content-length", str(len(body)))])
    return [body]


class _Body:
    """The application's response iterable, holding the request's permit until
    the server closes it and entering the request's deadline around each chunk."""

    def __init__(self, body: Iterable[bytes], permit: Any, deadline: Optional[Deadline]) -> None:
        self._body = body
        self._it: Optional[Iterator[bytes]] = None
        self._permit = permit
        self._deadline = deadline

    def __iter__(self) -> "_Body":
        return self

    def __next__(self) -> bytes:
        if self._it is None:
            self._it = iter(self._body)
        if self._deadline is None:
            return next(self._it)
        with self._deadline:
            return next(self._it)

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            permit, self._permit = self._permit, None
            if permit is not None:
                permit.release()


class SeawallMiddleware:
    """See the module's documentation."""

    def __init__(
        self,
        app: WSGIApp,
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
        name = self._gate.deadline_header
        self._environ_key = None if name is None else "HTTP_" + name.upper().replace("-", "_")

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        gate = self._gate
        if gate.health is not None and environ.get("PATH_INFO") == gate.health_path:
            status, doc = gate.health.answer()
            return _answer(start_response, status, JSON, doc)
        deadline = None
        raw = environ.get(self._environ_key) if self._environ_key is not None else None
        if raw is not None:
            seconds = parse_deadline_ms(str(raw))
            if seconds is None:
                return _answer(start_response, *gate.bad_deadline(str(raw)))
            deadline = Deadline(seconds)
        with deadline if deadline is not None else contextlib.nullcontext():
            permit = None
            if gate.bulkhead is not None:
                try:
                    permit = gate.bulkhead.acquire(gate.priority(environ))
                except BulkheadFullError as e:
                    return _answer(start_response, *gate.refused(e))
            try:
                body = self.app(environ, start_response)
            except BaseException:
                if permit is not None:
                    permit.release()
                raise
        if permit is None and deadline is None:
            return body
        return _Body(body, permit, deadline)
