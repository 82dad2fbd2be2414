"""Fallbacks, a stale-if-error cache, and composition in DESIGN §9 order:
fallback → bulkhead → circuit breaker → retry → timeout → chaos → call."""

from __future__ import annotations

import contextvars
import datetime
import functools
import inspect
import logging
import threading
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, Generic, Hashable, List, Optional, Sequence, Tuple, TypeVar, Union, cast

from . import _listeners, _native, _numbers, _seconds
from ._breaker import CircuitBreaker
from ._bulkhead import Bulkhead
from ._callables import is_async_callable
from ._chaos import Chaos
from ._classify import ExceptionSpec, matcher
from ._deadline import Deadline, Timeout, run_within
from ._retry import Retry
from ._seconds import Seconds

__all__ = ["StaleCache", "Fallback", "fallback", "Policy", "PolicyResult", "wrap"]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

_MISS = object()

log = logging.getLogger("seawall")


class StaleCache:
    """A stale-if-error cache (RFC 5861's ``stale-if-error``, as a fallback):
    every successful result is kept under its call's arguments, and when the
    call later fails, the last good value is served instead, marked
    ``source="stale-cache"``. Backed by :mod:`cachetools`: an LRU of ``maxsize``
    entries (default ``STALE_CACHE_MAX_ENTRIES``, 1024, as in Node), each served at most ``max_stale`` seconds after it was stored
    (``None``: until evicted). ``key(*args, **kwargs)`` defaults to
    ``cachetools.keys.hashkey``; calls whose arguments cannot be hashed are not
    cached. Thread-safe (a lock around the cache only, never around calls)."""

    def __init__(
        self,
        maxsize: int = _native.STALE_CACHE_MAX_ENTRIES,
        *,
        max_stale: Optional[Seconds] = None,
        key: Optional[Callable[..., Hashable]] = None,
    ) -> None:
        try:
            import cachetools
            import cachetools.keys
        except ImportError as e:  # pragma: no cover - a dependency of the package
            raise ImportError("seawall.StaleCache needs the cachetools package (pip install cachetools)") from e
        if not isinstance(maxsize, int) or maxsize < 1:
            from ._errors import SeawallConfigError

            raise SeawallConfigError(f"invalid maxsize: must be a whole number >= 1, got {maxsize!r}", "maxsize")
        _numbers.opt(_numbers.function, key, "key")
        self._cache: Any
        if max_stale is None:
            self._cache = cachetools.LRUCache(maxsize)
        else:
            _seconds.to_ns(max_stale, "max_stale")
            ttl = max_stale.total_seconds() if isinstance(max_stale, datetime.timedelta) else max_stale
            self._cache = cachetools.TTLCache(maxsize, ttl=ttl)
        self._key = key if key is not None else cachetools.keys.hashkey
        self._lock = threading.Lock()

    def _k(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Optional[Hashable]:
        try:
            k = self._key(*args, **kwargs)
            hash(k)
            return k
        except TypeError:
            return None

    def put(self, args: Tuple[Any, ...], kwargs: Dict[str, Any], value: Any) -> None:
        k = self._k(args, kwargs)
        if k is not None:
            with self._lock:
                self._cache[k] = value

    def get(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        """The stored value, or the private ``_MISS`` marker."""
        k = self._k(args, kwargs)
        if k is None:
            return _MISS
        with self._lock:
            return self._cache.get(k, _MISS)

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache)


@dataclass(frozen=True)
class PolicyResult(Generic[T]):
    """The value of a call and where it came from: ``source`` is ``"primary"``,
    ``"fallback-1"``, ``"fallback-2"``, … or ``"stale-cache"``; ``degraded`` is
    true for anything but the primary; ``error`` is the primary's exception."""

    value: T
    source: str = "primary"
    degraded: bool = False
    error: Optional[BaseException] = None
    #: A sync call ran past the policy's ``timeout``: Python cannot interrupt
    #: sync code, so the value came late (it is still the value).
    overran: bool = False


# Set by a sync attempt that finished after its timeout, read by the call that
# made it (per thread and task, like the deadline itself).
_OVERRAN: "contextvars.ContextVar[bool]" = contextvars.ContextVar("seawall-overran", default=False)


class Fallback:
    """Alternatives tried in order when the call raises an exception matched by
    ``on`` (default ``Exception``: refusals by an open breaker or a full
    bulkhead included). An alternative is a :class:`StaleCache`, a callable
    (called with the call's own arguments; ``async`` ones are awaited in async
    code), or any other value (returned as is). If every alternative fails, the
    primary's exception propagates unchanged."""

    def __init__(self, *alternatives: Any, on: ExceptionSpec = Exception) -> None:
        if not alternatives:
            raise TypeError("fallback needs at least one alternative")
        self.alternatives = alternatives
        self._on = cast(Callable[[BaseException], bool], matcher(on, "on"))
        labels: List[str] = []
        k = 0
        for alt in alternatives:
            if isinstance(alt, StaleCache):
                labels.append("stale-cache")
            else:
                k += 1
                labels.append(f"fallback-{k}")
        self._labels = labels
        self._caches = [a for a in alternatives if isinstance(a, StaleCache)]
        self._on_fallback: Tuple[FallbackListener, ...] = ()

    def on_fallback(self, listener: "FallbackListener") -> "FallbackListener":
        """Call ``listener(fallback, result)`` each time an alternative answers
        for a failed call (Node's ``fallback`` event), ``result`` the
        :class:`PolicyResult` about to be returned: ``result.source`` is where
        it came from (``fallback-1``, …, ``stale-cache``), ``result.error`` the
        primary's exception. Usable as a decorator; returns ``listener``. A
        listener that raises an ``Exception`` is logged (logger ``seawall``)
        and changes nothing (DESIGN §1)."""
        self._on_fallback = self._on_fallback + (_listeners.checked(listener),)
        return listener

    def remove_listener(self, listener: Any) -> None:
        """Stop calling ``listener`` (from :meth:`on_fallback`)."""
        self._on_fallback = _listeners.without(self._on_fallback, listener)

    def _answered(self, result: "PolicyResult[Any]") -> "PolicyResult[Any]":
        """The ``seawall`` logger (INFO), then every listener; returns ``result``."""
        log.info("seawall: fallback: %s answered after %r", result.source, result.error)
        _listeners.tell(self._on_fallback, (self, result), "fallback")
        return result

    def handles(self, exc: BaseException) -> bool:
        return isinstance(exc, Exception) and self._on(exc)

    def remember(self, args: Tuple[Any, ...], kwargs: Dict[str, Any], value: Any) -> None:
        for c in self._caches:
            c.put(args, kwargs, value)

    def recover(self, exc: BaseException, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> PolicyResult[Any]:
        for alt, label in zip(self.alternatives, self._labels):
            if isinstance(alt, StaleCache):
                v = alt.get(args, kwargs)
                if v is not _MISS:
                    return self._answered(PolicyResult(v, label, True, exc))
                continue
            if callable(alt):
                try:
                    v = alt(*args, **kwargs)
                except Exception:
                    continue
                if inspect.isawaitable(v):
                    raise TypeError("an async fallback needs an async call")
                return self._answered(PolicyResult(v, label, True, exc))
            return self._answered(PolicyResult(alt, label, True, exc))
        raise exc

    async def recover_async(
        self, exc: BaseException, args: Tuple[Any, ...], kwargs: Dict[str, Any]
    ) -> PolicyResult[Any]:
        for alt, label in zip(self.alternatives, self._labels):
            if isinstance(alt, StaleCache):
                v = alt.get(args, kwargs)
                if v is not _MISS:
                    return self._answered(PolicyResult(v, label, True, exc))
                continue
            if callable(alt):
                try:
                    v = alt(*args, **kwargs)
                    if inspect.isawaitable(v):
                        v = await v
                except Exception:
                    continue
                return self._answered(PolicyResult(v, label, True, exc))
            return self._answered(PolicyResult(alt, label, True, exc))
        raise exc

    def __call__(self, fn: F) -> F:
        """Decorate ``fn`` with this fallback alone."""
        return Policy(fallback=self)(fn)


#: ``listener(fallback, result)`` for :meth:`Fallback.on_fallback`.
FallbackListener = Callable[[Fallback, PolicyResult[Any]], Any]


def fallback(*alternatives: Any, on: ExceptionSpec = Exception) -> Fallback:
    """A :class:`Fallback`: ``@fallback(StaleCache(), default_value)``."""
    return Fallback(*alternatives, on=on)


Layer = Union[Fallback, Bulkhead, CircuitBreaker, Retry, Timeout, Chaos, float, int]


class Policy:
    """Layers composed in DESIGN §9 order, outermost first: ``fallback`` →
    ``bulkhead`` → ``breaker`` → ``retry`` → ``timeout`` → ``chaos`` → the call. So a
    retried call holds one bulkhead permit and counts as one call in the
    breaker, each attempt gets its own ``timeout`` (seconds, or a
    :class:`~seawall.Timeout`), and a :class:`~seawall.Chaos` policy's injected
    latency, hang or :class:`~seawall.ChaosError` reaches every other layer as
    the dependency's own would (each attempt draws again).

    ``policy(fn)`` decorates (sync or ``async def``) and returns plain values;
    :meth:`execute` / :meth:`execute_async` return a :class:`PolicyResult` that
    says where the value came from and whether it is degraded.

    A ``timeout`` cancels an ``async`` attempt at its deadline, but cannot stop
    sync code: a sync attempt only sees the deadline as
    :func:`~seawall.current_deadline` (to pass on, e.g. as an HTTP client's
    timeout) and runs to its end; :meth:`execute` then returns
    ``PolicyResult.overran=True`` when it ended past the timeout. A sync call with
    no fallback and no timeout runs entirely in native code."""

    def __init__(
        self,
        *,
        fallback: Union[Fallback, Sequence[Any], None] = None,
        bulkhead: Optional[Bulkhead] = None,
        breaker: Optional[CircuitBreaker] = None,
        retry: Optional[Retry] = None,
        timeout: Union[Timeout, Seconds, None] = None,
        name: Optional[str] = None,
        chaos: Optional[Chaos] = None,
    ) -> None:
        _numbers.opt(_numbers.text, name, "name")
        if fallback is not None and not isinstance(fallback, Fallback):
            if isinstance(fallback, (str, bytes)) or not isinstance(fallback, Sequence):
                raise _numbers.config_error("fallback", f"must be a seawall.Fallback or a list of alternatives, got {fallback!r}")
            fallback = Fallback(*fallback)
        if timeout is not None and not isinstance(timeout, Timeout):
            timeout = Timeout(timeout)
        for value, cls, what in (
            (bulkhead, Bulkhead, "bulkhead"),
            (breaker, CircuitBreaker, "breaker"),
            (retry, Retry, "retry"),
            (chaos, Chaos, "chaos"),
        ):
            if value is not None and not isinstance(value, cls):
                raise _numbers.config_error(what, f"must be a seawall.{cls.__name__}, got {value!r}")
        self.fallback = fallback
        self.bulkhead = bulkhead
        self.breaker = breaker
        self.retry = retry
        self.timeout = timeout
        self.name = name
        self.chaos = chaos

    # -- sync ----------------------------------------------------------------

    def _inner_sync(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        call = fn if self.chaos is None else self.chaos(fn)
        if self.timeout is not None:
            limit = self.timeout
            seconds = limit.seconds
            attempt = call

            def timed(*args: Any, **kwargs: Any) -> Any:
                with Deadline(seconds) as d:
                    value = attempt(*args, **kwargs)
                    if d.expired():
                        _OVERRAN.set(True)
                        limit._timed_out(seconds)
                    return value

            call = timed
        kw: Dict[str, Any] = {}
        if self.bulkhead is not None:
            kw.update(bulkhead=self.bulkhead._native, priority=self.bulkhead.priority,
                      queue_timeout=self.bulkhead.queue_timeout)
        if self.breaker is not None:
            kw["breaker"] = self.breaker._native
        if self.retry is not None:
            call = self.retry._checked(call)
            kw.update(retry=self.retry._native, retry_slow=self.retry._slow_sync)
        return _native.Guarded(call, **kw) if kw else call

    def execute(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> PolicyResult[T]:
        """Run ``fn(*args, **kwargs)`` through the policy (sync)."""
        return self._run_sync(self._inner_sync(fn), args, kwargs)

    def _run_sync(self, inner: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> PolicyResult[Any]:
        token = _OVERRAN.set(False)
        try:
            value = inner(*args, **kwargs)
        except BaseException as exc:
            if self.fallback is None or not self.fallback.handles(exc):
                raise
            return self.fallback.recover(exc, args, kwargs)
        else:
            overran = _OVERRAN.get()
        finally:
            _OVERRAN.reset(token)
        if self.fallback is not None:
            self.fallback.remember(args, kwargs, value)
        return PolicyResult(value, overran=overran)

    # -- async ---------------------------------------------------------------

    async def execute_async(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> PolicyResult[T]:
        """Run ``await fn(*args, **kwargs)`` through the policy."""
        return cast(PolicyResult[T], await self._run_async(self._inner_async(fn), args, kwargs))

    def _inner_async(self, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        call = fn if self.chaos is None else self.chaos(fn)
        if self.timeout is not None:
            limit = self.timeout
            seconds = limit.seconds
            attempt = call

            async def timed(*args: Any, **kwargs: Any) -> Any:
                with Deadline(seconds) as d:
                    return await run_within(attempt(*args, **kwargs), d.remaining(), limit)

            call = timed
        if self.retry is not None:
            call = self.retry(call)
        if self.breaker is not None:
            call = self.breaker(call)
        if self.bulkhead is not None:
            call = self.bulkhead(call)
        return call

    async def _run_async(
        self, inner: Callable[..., Awaitable[Any]], args: Tuple[Any, ...], kwargs: Dict[str, Any]
    ) -> PolicyResult[Any]:
        try:
            value = await inner(*args, **kwargs)
        except BaseException as exc:
            if self.fallback is None or not self.fallback.handles(exc):
                raise
            return await self.fallback.recover_async(exc, args, kwargs)
        if self.fallback is not None:
            self.fallback.remember(args, kwargs, value)
        return PolicyResult(value)

    # -- decorator -----------------------------------------------------------

    def __call__(self, fn: F) -> F:
        if is_async_callable(fn):
            inner_async = self._inner_async(fn)

            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                return (await self._run_async(inner_async, args, kwargs)).value

            return cast(F, functools.wraps(fn)(async_wrapper))
        inner = self._inner_sync(fn)
        if self.fallback is None:
            return cast(F, functools.update_wrapper(inner, fn) if inner is not fn else fn)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return self._run_sync(inner, args, kwargs).value

        return cast(F, functools.wraps(fn)(wrapper))

    def __repr__(self) -> str:
        layers = [n for n in ("fallback", "bulkhead", "breaker", "retry", "timeout", "chaos") if getattr(self, n) is not None]
        return f"<Policy {' -> '.join(layers) or 'empty'}>"


def wrap(*layers: Layer) -> Policy:
    """A :class:`Policy` from layers given in any order: each goes to its DESIGN
    §9 place (a number is a timeout in seconds). Two layers of one kind are a
    ``TypeError``."""
    slots: Dict[str, Any] = {}
    for layer in layers:
        if isinstance(layer, Fallback):
            kind = "fallback"
        elif isinstance(layer, Bulkhead):
            kind = "bulkhead"
        elif isinstance(layer, CircuitBreaker):
            kind = "breaker"
        elif isinstance(layer, Retry):
            kind = "retry"
        elif isinstance(layer, Timeout) or (isinstance(layer, (int, float)) and not isinstance(layer, bool)):
            kind = "timeout"
        elif isinstance(layer, Chaos):
            kind = "chaos"
        else:
            raise TypeError(f"wrap() takes Fallback, Bulkhead, CircuitBreaker, Retry, Timeout or Chaos layers, got {layer!r}")
        if kind in slots:
            raise TypeError(f"wrap() got two {kind} layers")
        slots[kind] = layer
    return Policy(**slots)
