"""seawall: circuit breaker, retry with budgets, bulkhead, rate limiter and deadlines, on a
lock-free Rust core (``seawall._native``), for threads and asyncio; a breaker,
bulkhead, retry budget or retry throttle can be shared by every worker process of
a host (``shared="name"``), and so can a rate limiter.

Durations are seconds, a number or a ``datetime.timedelta`` (``Seconds``);
thresholds and shares are percentages ``0..100``. See ``CircuitBreaker``, ``Retry``, ``Bulkhead``, ``timeout``,
``Deadline``, ``RateLimiter``, ``fallback``, ``StaleCache`` and ``Policy`` / ``wrap``;
fault injection for game days is ``chaos``, web middleware ``seawall.asgi`` /
``seawall.wsgi``.
"""

from __future__ import annotations

import logging

from . import _native
from ._breaker import CircuitBreaker, CountWindow, Listener, Permit, State, TimeWindow
from ._bulkhead import PRIORITIES, Bulkhead, BulkheadPermit, BulkheadTicket
from ._deadline import Deadline, Timeout, current_deadline, timeout
from ._errors import (
    BulkheadFullError,
    CircuitOpenError,
    DeadlineExceededError,
    PermitAlreadyUsedError,
    PermitsExhaustedError,
    RateLimitedError,
    ResultRejected,
    SeawallConfigError,
    SeawallError,
    SharedRegionError,
)
# -- chaos (fault injection, DESIGN §11) --
from ._chaos import Chaos, ChaosError, ChaosFile, ChaosRegistry, ChaosRules, chaos
# -- middleware helpers (seawall.asgi, seawall.wsgi) --
from ._middleware import HealthReport, priority_by_path
from ._policy import Fallback, Policy, PolicyResult, StaleCache, fallback, wrap
from ._rate_limiter import KeyedRateLimit, RateLimiter
from ._retry import (
    Attempt,
    Backoff,
    Retry,
    RetryBudget,
    RetryState,
    RetryThrottle,
    is_testing,
    linear_backoff,
    set_testing,
)
from ._seconds import Seconds

# The library prints nothing: its ``seawall`` logger (breaker transitions at
# WARNING, retries at INFO, listener errors at ERROR) reaches an application
# only through handlers it configures.
logging.getLogger("seawall").addHandler(logging.NullHandler())

Health = _native.Health
monotonic = _native.monotonic

__all__ = [
    # -- chaos --
    "Chaos",
    "ChaosError",
    "ChaosFile",
    "ChaosRegistry",
    "ChaosRules",
    "chaos",
    # -- middleware helpers --
    "HealthReport",
    "priority_by_path",
    # --
    "Attempt",
    "Backoff",
    "Bulkhead",
    "BulkheadFullError",
    "BulkheadPermit",
    "BulkheadTicket",
    "CircuitBreaker",
    "CircuitOpenError",
    "CountWindow",
    "Deadline",
    "DeadlineExceededError",
    "Fallback",
    "Health",
    "KeyedRateLimit",
    "Listener",
    "PRIORITIES",
    "Permit",
    "PermitAlreadyUsedError",
    "PermitsExhaustedError",
    "Policy",
    "PolicyResult",
    "RateLimitedError",
    "RateLimiter",
    "ResultRejected",
    "Retry",
    "RetryBudget",
    "RetryState",
    "RetryThrottle",
    "SeawallConfigError",
    "SeawallError",
    "Seconds",
    "SharedRegionError",
    "StaleCache",
    "State",
    "TimeWindow",
    "Timeout",
    "current_deadline",
    "fallback",
    "is_testing",
    "linear_backoff",
    "monotonic",
    "set_testing",
    "timeout",
    "wrap",
    "__version__",
]


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("seawall")
    except Exception:  # pragma: no cover - not installed as a distribution
        return "0+unknown"


__version__ = _version()
