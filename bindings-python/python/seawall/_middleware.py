"""What the ASGI and WSGI middleware (:mod:`seawall.asgi`, :mod:`seawall.wsgi`)
share: the health report, the priority of a request by its path, the
per-request deadline header, and the answers they give without calling the
application (503 with ``Retry-After``, the health document, a 400 for a bad
deadline header). Nothing here imports a web framework."""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _numbers
from ._breaker import CircuitBreaker
from ._bulkhead import PRIORITIES, Bulkhead
from ._errors import BulkheadFullError, SeawallConfigError, SharedRegionError

__all__ = ["HealthReport", "priority_by_path", "request_path", "Gate"]

_Source = Any  # seawall.Health, a CircuitBreaker, or a callable returning a status
Sources = Union[_Source, Sequence[_Source]]

_RANK = {"healthy": 0, "degraded": 1, "unhealthy": 2}
# A breaker's state as the health of what it guards: half-open is probing
# (some calls refused), open and forced-open refuse every call.
_BREAKER_STATUS = {"closed": "healthy", "disabled": "healthy", "half_open": "degraded",
                   "open": "unhealthy", "forced_open": "unhealthy"}


class HealthReport:
    """The service's health by dependency, for a health endpoint.

    ``dependencies`` maps a name to a source or a list of sources: a
    :class:`seawall.Health` (its windowed status, DESIGN §7, and its snapshot),
    a :class:`~seawall.CircuitBreaker` (closed or disabled: healthy; half-open,
    or open past its open period: degraded; open or forced-open: unhealthy), or a callable returning
    ``"healthy"``, ``"degraded"`` or ``"unhealthy"``. A dependency is as
    healthy as its worst source, the service as its worst dependency (healthy
    with none). :meth:`check` gives the document; its HTTP status is 503 when
    the service is unhealthy, else 200 (a degraded service still serves)."""

    def __init__(self, dependencies: Mapping[str, Sources]) -> None:
        self._deps: List[Tuple[str, List[_Source]]] = []
        if not isinstance(dependencies, Mapping):
            raise _numbers.config_error("health", f"must map dependency names to sources, got {dependencies!r}")
        for name, sources in dependencies.items():
            items = list(sources) if isinstance(sources, (list, tuple)) else [sources]
            for s in items:
                if not (isinstance(s, CircuitBreaker) or hasattr(s, "snapshot") or callable(s)):
                    raise _numbers.config_error(
                        "health", f"the health of {name!r} takes seawall.Health, CircuitBreaker or a callable, got {s!r}"
                    )
            self._deps.append((str(name), items))

    def check(self) -> Dict[str, Any]:
        """``{"status": ..., "dependencies": {name: {"status": ..., "breakers":
        {breaker name: state}, "health": [snapshots]}}}``."""
        deps: Dict[str, Any] = {}
        worst = "healthy"
        for name, sources in self._deps:
            entry: Dict[str, Any] = {}
            status = "healthy"
            for s in sources:
                if isinstance(s, CircuitBreaker):
                    try:
                        state = s.state.value
                        # Open past its open period: the next call probes. Until
                        # one comes the state word says open; report what it is.
                        if state == "open" and s.retry_after is None:
                            state = "half_open"
                        # A shared breaker's permits or probes held by dead workers,
                        # until a caller gives them back (DESIGN §8): reported, they
                        # change no status.
                        abandoned = s.metrics().get("permits_abandoned") if s.shared else None
                    except SharedRegionError as e:
                        # An overwritten region: no state to trust, and said so.
                        state, abandoned = "unknown", None
                        entry.setdefault("errors", {})[s.name or name] = str(e)
                    entry.setdefault("breakers", {})[s.name or name] = state
                    st = _BREAKER_STATUS.get(state, "unhealthy")
                    if abandoned:
                        entry.setdefault("abandoned", {})[s.name or name] = abandoned
                elif hasattr(s, "snapshot"):
                    snap = s.snapshot()
                    entry.setdefault("health", []).append(snap)
                    st = str(snap["status"])
                else:
                    st = str(s())
                if st not in _RANK:
                    st = "unhealthy"  # a status nobody knows is not a healthy one
                status = max(status, st, key=_RANK.__getitem__)
            entry["status"] = status
            deps[name] = entry
            worst = max(worst, status, key=_RANK.__getitem__)
        return {"status": worst, "dependencies": deps}

    def answer(self) -> Tuple[int, bytes]:
        doc = self.check()
        return (503 if doc["status"] == "unhealthy" else 200), json.dumps(doc).encode()


def request_path(request: Union[str, Mapping[str, Any]]) -> str:
    """The path of an ASGI scope (``path``) or a WSGI environ (``PATH_INFO``)."""
    if isinstance(request, str):
        return request
    return str(request.get("path", request.get("PATH_INFO", "")))


def priority_by_path(routes: Mapping[str, str], default: str = "normal") -> Callable[[Any], str]:
    """``get_priority`` from path prefixes, the seed documents' rule:
    ``priority_by_path({"/health": "critical", "/payments": "high",
    "/reports": "low"})``. The longest prefix that matches whole path segments
    wins (``/payments`` matches ``/payments`` and ``/payments/42``, not
    ``/paymentsx``); no match: ``default``. Priorities are those of
    :data:`seawall.PRIORITIES`; another is a config error naming ``routes``."""
    for p in (*routes.values(), default):
        if p not in PRIORITIES:
            raise SeawallConfigError(f"invalid routes: unknown priority {p!r}; use {PRIORITIES}", "routes")
    table = sorted(((k.rstrip("/") or "/", v) for k, v in routes.items()), key=lambda kv: -len(kv[0]))

    def get_priority(request: Union[str, Mapping[str, Any]]) -> str:
        path = request_path(request)
        for prefix, prio in table:
            if prefix == "/" or path == prefix or path.startswith(prefix + "/"):
                return prio
        return default

    return get_priority


# The deadline header's grammar is the Node middleware's (lib/middleware/common.js)
# so one client gets one answer from either package: JavaScript's \s around
# ASCII digits with an optional fraction (no sign, exponent, "_" or "inf",
# which float() would take), and a value > 0 that stays finite as a double.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_DEADLINE_MS = re.compile(f"[{_JS_SPACE}]*([0-9]+(?:\\.[0-9]+)?)[{_JS_SPACE}]*")


def parse_deadline_ms(value: str) -> Optional[float]:
    """A deadline header's milliseconds as seconds; ``None`` when it is not a
    plain decimal number of milliseconds greater than 0 (finite as a float)."""
    m = _DEADLINE_MS.fullmatch(value)
    if m is None:
        return None
    ms = float(m.group(1))
    if not (ms > 0 and ms != math.inf):
        return None
    return ms / 1000.0


class Gate:
    """The settings of one middleware and what it answers by itself."""

    def __init__(
        self,
        *,
        bulkhead: Optional[Bulkhead],
        get_priority: Optional[Callable[[Any], str]],
        health: Union[HealthReport, Mapping[str, Sources], None],
        health_path: str,
        deadline_header: Optional[str],
        retry_after: Any,
    ) -> None:
        if bulkhead is not None and not isinstance(bulkhead, Bulkhead):
            raise _numbers.config_error("bulkhead", f"must be a seawall.Bulkhead, got {bulkhead!r}")
        _numbers.opt(_numbers.function, get_priority, "get_priority")
        _numbers.text(health_path, "health_path")
        _numbers.opt(_numbers.text, deadline_header, "deadline_header")
        if health is not None and not isinstance(health, HealthReport):
            health = HealthReport(health)
        self.health: Optional[HealthReport] = health
        seconds = _numbers.duration(retry_after, "retry_after")
        if not (seconds >= 0 and seconds != math.inf):
            raise SeawallConfigError(f"invalid retry_after: must be a finite number of seconds >= 0, got {retry_after!r}", "retry_after")
        self.bulkhead = bulkhead
        self.get_priority = get_priority
        self.health_path = health_path
        self.deadline_header = deadline_header.lower() if deadline_header else None
        # HTTP's Retry-After is whole seconds: round up, never ask for less.
        self.retry_after = str(math.ceil(seconds))

    def priority(self, request: Mapping[str, Any]) -> str:
        assert self.bulkhead is not None
        return self.get_priority(request) if self.get_priority is not None else self.bulkhead.priority

    def refused(self, e: BulkheadFullError) -> Tuple[int, List[Tuple[str, str]], bytes]:
        body = json.dumps({"error": "overloaded", "reason": e.reason, "active": e.active, "queued": e.queued})
        return 503, [("content-type", "application/json"), ("retry-after", self.retry_after)], body.encode()

    def bad_deadline(self, value: str) -> Tuple[int, List[Tuple[str, str]], bytes]:
        """The Node middleware's 400, byte for byte: its message, the value as
        JSON.stringify quotes it, compact JSON in UTF-8 (a lone surrogate, which
        a WSGI server may pass on, as JSON's \\uXXXX escape)."""
        quoted = json.dumps(value, ensure_ascii=False)
        error = f"invalid {self.deadline_header}: must be a number of milliseconds greater than 0, not {quoted}"
        body = json.dumps({"error": error}, ensure_ascii=False, separators=(",", ":"))
        return 400, [("content-type", "application/json; charset=utf-8")], body.encode("utf-8", "backslashreplace")


JSON = [("content-type", "application/json"), ("cache-control", "no-store")]
