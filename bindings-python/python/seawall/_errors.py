"""The exceptions seawall raises. Every one is a :class:`SeawallError`.

Your own exceptions are never wrapped: whatever a protected call raises reaches
you unchanged. seawall raises its own only when it refuses a call (an open
breaker, a full bulkhead), when a configuration is invalid, or when a shared
region cannot be opened.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple


class SeawallError(Exception):
    """Base class of every exception seawall raises."""


class SeawallConfigError(SeawallError, ValueError):
    """An invalid configuration value. ``field`` names the keyword argument
    (``window.size`` and ``window.buckets`` for windows)."""

    def __init__(self, message: str, field: Optional[str] = None) -> None:
        super().__init__(message)
        self.field = field

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (str(self), self.field))


class CircuitOpenError(SeawallError):
    """A circuit breaker refused the call.

    ``retry_after`` is the number of seconds until the open period ends (only
    for state ``open``; ``None`` for ``half_open`` with every probe slot taken and
    for ``forced_open``). ``name`` is the breaker's name, ``state`` its state.
    """

    def __init__(
        self,
        message: str,
        name: Optional[str] = None,
        state: str = "open",
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.name = name
        self.state = state
        self.retry_after = retry_after

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (str(self), self.name, self.state, self.retry_after))


class PermitsExhaustedError(CircuitOpenError):
    """A shared circuit breaker refused the call because its host-wide permit
    table is full: ``limit`` calls (the breaker's ``permit_slots``, 4096 unless
    it was opened with another) of every process of the host were
    admitted and are not yet recorded (counted as ignored). It is a
    :class:`CircuitOpenError` (``retry_after`` is ``None``; ``state`` is the
    breaker's state, usually ``closed``), so a handler that answers refusals
    with a 503 answers these too; catch this class to tell them apart."""

    def __init__(
        self,
        message: str,
        name: Optional[str] = None,
        state: str = "closed",
        limit: int = 4096,
    ) -> None:
        super().__init__(message, name, state, None)
        self.limit = limit

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (str(self), self.name, self.state, self.limit))


class BulkheadFullError(SeawallError):
    """A bulkhead refused the call. ``reason`` is ``"full"`` (no permit and no
    room to wait), ``"shed"`` (load shedding: the priority's share is in use) or
    ``"timeout"`` (waited ``queue_timeout`` seconds in the queue); ``active`` and
    ``queued`` are the occupancy when it was refused."""

    def __init__(
        self,
        message: str,
        name: Optional[str] = None,
        active: int = 0,
        queued: int = 0,
        reason: str = "full",
    ) -> None:
        super().__init__(message)
        self.name = name
        self.active = active
        self.queued = queued
        self.reason = reason

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (str(self), self.name, self.active, self.queued, self.reason))


class ResultRejected(SeawallError):
    """A returned value that ``Retry(retry_on_result=...)`` marked worth a retry.
    Never raised to you: it is ``RetryState.exception`` in ``before_sleep``
    (``value`` is the value, also ``RetryState.result``), and when the
    attempts run out you get ``value`` back, not an exception (DESIGN §1)."""

    def __init__(self, value: Any) -> None:
        super().__init__(f"retry_on_result marked the returned value a failure: {value!r}")
        self.value = value

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.value,))


class PermitAlreadyUsedError(SeawallError):
    """A permit was recorded or released a second time (a permit works once)."""


class SharedRegionError(SeawallError):
    """A structure shared between processes could not be created or attached:
    another configuration or ABI in the region, a bad name, an OS error, or the
    creating process did not finish in time."""


class DeadlineExceededError(SeawallError, TimeoutError):
    """A :func:`seawall.timeout` or a policy's timeout expired before the call
    finished. It is a :class:`TimeoutError`, so code that catches
    ``TimeoutError`` catches it too."""


class RateLimitedError(SeawallError):
    """A rate limiter refused the call: over its rate (GCRA, DESIGN §10).

    ``retry_after`` is the number of seconds after which the same request
    conforms, unless other callers take the cells first (``math.inf`` when it
    never could); :class:`~seawall.Retry` reads it and waits it out when the
    deadline allows. ``name`` is the limiter's name, ``key`` the key of a keyed
    limiter. A circuit breaker never counts it as a failure of the dependency:
    the call was not made.
    """

    def __init__(
        self,
        message: str,
        name: Optional[str] = None,
        retry_after: float = 0.0,
        key: Any = None,
    ) -> None:
        super().__init__(message)
        self.name = name
        self.retry_after = retry_after
        self.key = key

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (str(self), self.name, self.retry_after, self.key))
