"""``seawall.RateLimiter``: GCRA rate limiting (DESIGN §10, the ATM Forum's
generic cell rate algorithm, as in Rust's ``governor``) on one atomic word of
the native core, optionally per key and shared by every process of the host.

One cell comes back every ``per / rate`` seconds (the emission interval ``T``,
rounded down to a whole nanosecond); a rested limiter gives up to ``burst``
cells at once. Taking ``n`` cells is all or none, in one lock-free step. A
refused take changes nothing and says exactly when the same request would
conform (``retry_after``, seconds). Waiting (:meth:`RateLimiter.acquire`,
:meth:`RateLimiter.acquire_async`) sleeps that long between takes, holding
nothing: an interrupted, timed-out or cancelled wait leaves no trace.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
import time
from typing import Any, Callable, Generator, Optional, Tuple, TypeVar, cast

from . import _native, _numbers, _registry
from ._callables import guard_async_gen, is_async_callable, refuse_coroutine, refuse_method_descriptor
from ._errors import RateLimitedError, SeawallConfigError
from ._numbers import duration, opt, whole
from ._seconds import Seconds

__all__ = ["RateLimiter", "KeyedRateLimit"]

F = TypeVar("F", bound=Callable[..., Any])

_U64 = 2**64 - 1
_U32 = 2**32 - 1


def key_word(key: Any) -> Tuple[Optional[int], Optional[bytes]]:
    """A user's key as the native limiter takes it: an ``int`` modulo 2**64, or
    the UTF-8 bytes of a ``str`` (and ``bytes`` as they are), which the native
    side folds with the limiter's own seed — the same in every process that
    shares it, in any language (unlike ``hash()``, salted per process).
    Anything else is a ``TypeError``."""
    if isinstance(key, bool):
        raise TypeError("a rate limiter key is an int, str or bytes, not a bool")
    if isinstance(key, int):
        return key & _U64, None
    if isinstance(key, str):
        return None, key.encode("utf-8")
    if isinstance(key, (bytes, bytearray, memoryview)):
        return None, bytes(key)
    raise TypeError(f"a rate limiter key is an int, str or bytes, got {type(key).__name__}")


def _timeout(timeout: Optional[Seconds], field: str = "timeout") -> float:
    """A wait limit in seconds (``None``: none) as a float (``inf``: none)."""
    if timeout is None:
        return math.inf
    seconds = duration(timeout, field)
    if math.isnan(seconds) or seconds < 0:
        raise SeawallConfigError(f"invalid {field}: must be seconds >= 0, got {timeout}", field)
    return seconds


class RateLimiter:
    """``rate`` calls per ``per`` seconds, bursts of up to ``burst`` (default
    ``rate``: a rested limiter allows a whole period's calls at once, as
    ``governor``'s quotas do).

    * ``try_acquire(n=1)`` → ``bool``, never waits; ``take(n=1)`` → ``None``
      (taken) or the seconds to wait, never waits either.
    * ``acquire(n=1, timeout=None)`` waits (threads; the GIL is released while
      it sleeps) until admitted → ``True``, or ``False`` as soon as the wait
      could not end within ``timeout`` seconds.
    * ``await acquire_async(n=1, timeout=None)``: the same for asyncio;
      cancelling it leaves nothing behind.
    * ``@limiter``, ``with limiter:``, ``async with limiter:``: one cell per
      call; with ``wait=True`` (the default) they wait up to ``max_wait``
      seconds (``None``: as long as it takes), else — and with ``wait=False``
      at once — raise :class:`~seawall.RateLimitedError` with ``retry_after``.
    * ``keyed=True``: every key (``int``, ``str`` or ``bytes``; e.g. a client
      id) gets its own limit in a fixed table of 4096 slots. Pass ``key=`` to
      each method, or use ``limiter.for_key(key)``, which has the same methods.
      Keys sharing a slot share its cells (stricter, never looser): with ``K``
      clients active at once a key shares with another with probability about
      ``K / 4096``.
    * ``shared="name"``: one limiter for every process of the host
      (``/dev/shm/seawall-rate-limiter-<name>``, keyed:
      ``seawall-keyed-rate-limiter-<name>``), owner-only and checked as DESIGN
      §8 says; every process must give the same ``rate``, ``per`` and
      ``burst`` (else :class:`~seawall.SharedRegionError`).

    ``stats()`` counts this object's admitted and rejected takes (the
    ``seawall_rate_limiter_*_total`` counters of :mod:`seawall.prometheus`).
    ``clock`` (tests, simulations) is a callable returning monotonic seconds;
    ``sleep`` and ``async_sleep`` replace ``time.sleep`` and ``asyncio.sleep``.
    ``per``, ``max_wait`` and ``timeout`` are seconds, a number or a
    :class:`datetime.timedelta`. Errors: invalid values (a ``bool`` too) are
    :class:`~seawall.SeawallConfigError` naming the argument; ``n`` outside
    ``1..burst`` too, since no wait could admit it.
    """

    def __init__(
        self,
        rate: int,
        per: Seconds = 1.0,
        burst: Optional[int] = None,
        shared: Optional[str] = None,
        name: Optional[str] = None,
        *,
        keyed: bool = False,
        wait: bool = True,
        max_wait: Optional[Seconds] = None,
        clock: Optional[Callable[[], float]] = None,
        sleep: Optional[Callable[[float], Any]] = None,
        async_sleep: Optional[Callable[[float], Any]] = None,
    ) -> None:
        rate = whole(rate, "rate")
        burst = opt(whole, burst, "burst")
        opt(_numbers.text, name, "name")
        opt(_numbers.text, shared, "shared")
        for fn, field in ((clock, "clock"), (sleep, "sleep"), (async_sleep, "async_sleep")):
            opt(_numbers.function, fn, field)
        _numbers.flag(keyed, "keyed")
        _numbers.flag(wait, "wait")
        per = duration(per, "per")
        if burst is None:
            burst = max(1, min(rate, 2**32 - 1))
        self._max_wait = _timeout(max_wait, "max_wait")
        self._native = _native.RateLimiter(rate, per, burst, keyed=keyed, name=name, shared=shared, clock=clock)
        self._native_take = self._native.take
        self.wait = bool(wait)
        self._now: Callable[[], float] = clock if clock is not None else time.monotonic
        self._sleep: Callable[[float], Any] = sleep if sleep is not None else time.sleep
        self._async_sleep: Callable[[float], Any] = (
            async_sleep if async_sleep is not None else asyncio.sleep
        )
        self._region = f"rate-limiter:{keyed}:{shared}" if shared is not None else None
        _registry.register(self)

    # -- what it is ----------------------------------------------------------

    @property
    def name(self) -> Optional[str]:
        return self._native.name

    @property
    def rate(self) -> int:
        return self._native.rate

    @property
    def per(self) -> float:
        return self._native.period

    @property
    def burst(self) -> int:
        return self._native.burst

    @property
    def keyed(self) -> bool:
        return self._native.keyed

    @property
    def shared(self) -> bool:
        return self._native.shared

    @property
    def created(self) -> bool:
        return self._native.created

    @property
    def max_wait(self) -> Optional[float]:
        return None if math.isinf(self._max_wait) else self._max_wait

    def stats(self) -> "dict[str, int]":
        """``{"admitted", "rejected", "cells"}``: takes admitted and refused,
        and the cells the admitted ones spent, since the limiter was made; of
        every process for a shared limiter (its region holds them)."""
        return self._native.stats()

    @staticmethod
    def unlink_shared(name: str, keyed: bool = False) -> None:
        """Remove the shared region ``name`` (a missing one is fine); processes
        attached keep theirs."""
        _native.RateLimiter.unlink_shared(name, keyed)

    def for_key(self, key: Any) -> "KeyedRateLimit":
        """This keyed limiter's limit for ``key``, with the same methods and
        forms (decorator, ``with``) as the limiter."""
        if not self.keyed:
            raise TypeError("for_key() needs a keyed rate limiter (keyed=True)")
        return KeyedRateLimit(self, key)

    # -- taking cells --------------------------------------------------------

    def _take(self, n: int, key: Any) -> Optional[float]:
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"n must be a whole number of cells, got {n!r}")
        if n < 0:
            # Said here, with the user's own number: clamped for the native side
            # below, it would read as some other count (or as zero).
            raise _numbers.config_error("n", f"must be between 1 and {self.burst}, got {n}")
        word, raw = (None, None) if key is None else key_word(key)
        # Past u32 no count of cells is valid: the native side refuses it,
        # naming the range, without overflowing its i64.
        return self._native.take(min(n, 2**32), word, raw)

    def try_acquire(self, n: int = 1, *, key: Any = None) -> bool:
        """Take ``n`` cells now if the rate allows: ``True`` (taken) or
        ``False`` (nothing taken)."""
        if key is None and n.__class__ is int and 0 < n <= _U32:
            # The common case goes straight to the native take: no key to map,
            # no count to bound.
            return self._native_take(n) is None
        return self._take(n, key) is None

    def take(self, n: int = 1, *, key: Any = None) -> Optional[float]:
        """Take ``n`` cells now if the rate allows: ``None`` (taken), else the
        seconds until the same request would conform (nothing taken)."""
        return self._take(n, key)

    def acquire(self, n: int = 1, timeout: Optional[Seconds] = None, *, key: Any = None) -> bool:
        """Wait until ``n`` cells are taken → ``True``; ``False`` as soon as the
        next chance lies past ``timeout`` seconds (``None``: wait as long as it
        takes). Sleeps with the GIL released; holds nothing while it sleeps."""
        limit = _timeout(timeout)
        start = self._now()
        while True:
            wait = self._take(n, key)
            if wait is None:
                return True
            if math.isinf(wait) or self._now() - start + wait > limit:
                return False
            self._sleep(wait)

    async def acquire_async(
        self, n: int = 1, timeout: Optional[Seconds] = None, *, key: Any = None
    ) -> bool:
        """:meth:`acquire` for asyncio: ``await`` it. Cancelling it leaves
        nothing behind (nothing is taken until it is admitted)."""
        limit = _timeout(timeout)
        start = self._now()
        while True:
            wait = self._take(n, key)
            if wait is None:
                return True
            if math.isinf(wait) or self._now() - start + wait > limit:
                return False
            await self._async_sleep(wait)

    def _refused(self, retry_after: float, key: Any) -> RateLimitedError:
        who = "rate limiter" if self.name is None else f"rate limiter {self.name!r}"
        if key is not None:
            who += f" (key {key!r})"
        return RateLimitedError(
            f"{who} is over its rate; retry after {retry_after:.3f} s",
            self.name,
            retry_after,
            key,
        )

    def _enter(self, key: Any) -> None:
        """One cell for a guarded call, waiting as configured, else raise."""
        limit = self._max_wait if self.wait else 0.0
        start = self._now()
        while True:
            wait = self._take(1, key)
            if wait is None:
                return
            if math.isinf(wait) or self._now() - start + wait > limit:
                raise self._refused(wait, key)
            self._sleep(wait)

    async def _enter_async(self, key: Any) -> None:
        limit = self._max_wait if self.wait else 0.0
        start = self._now()
        while True:
            wait = self._take(1, key)
            if wait is None:
                return
            if math.isinf(wait) or self._now() - start + wait > limit:
                raise self._refused(wait, key)
            await self._async_sleep(wait)

    # -- decorator, with, async with -----------------------------------------

    def __call__(self, fn: F) -> F:
        """``@limiter``: one cell per call (an async generator's or generator's
        when it starts), waiting or raising as configured."""
        return cast(F, _decorate(self, None, fn))

    def __enter__(self) -> "RateLimiter":
        self._enter(None)
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    async def __aenter__(self) -> "RateLimiter":
        await self._enter_async(None)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    def __repr__(self) -> str:
        return (
            f"<RateLimiter name={self.name!r} rate={self.rate} per={self.per} "
            f"burst={self.burst} keyed={self.keyed} shared={self.shared}>"
        )


class KeyedRateLimit:
    """One key's limit in a keyed :class:`RateLimiter` (``limiter.for_key(key)``):
    the limiter's methods and forms with ``key`` filled in."""

    def __init__(self, limiter: RateLimiter, key: Any) -> None:
        key_word(key)  # refuses a key of the wrong type now, not at the first call
        self.limiter = limiter
        self.key = key

    def try_acquire(self, n: int = 1) -> bool:
        return self.limiter.try_acquire(n, key=self.key)

    def take(self, n: int = 1) -> Optional[float]:
        return self.limiter.take(n, key=self.key)

    def acquire(self, n: int = 1, timeout: Optional[Seconds] = None) -> bool:
        return self.limiter.acquire(n, timeout, key=self.key)

    async def acquire_async(self, n: int = 1, timeout: Optional[Seconds] = None) -> bool:
        return await self.limiter.acquire_async(n, timeout, key=self.key)

    def __call__(self, fn: F) -> F:
        return cast(F, _decorate(self.limiter, self.key, fn))

    def __enter__(self) -> "KeyedRateLimit":
        self.limiter._enter(self.key)
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    async def __aenter__(self) -> "KeyedRateLimit":
        await self.limiter._enter_async(self.key)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    def __repr__(self) -> str:
        return f"<KeyedRateLimit key={self.key!r} of {self.limiter!r}>"


def _decorate(limiter: RateLimiter, key: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    refuse_method_descriptor(fn, "RateLimiter")
    if inspect.isasyncgenfunction(fn):

        async def start() -> None:
            await limiter._enter_async(key)

        def finish(_token: None, _exc: Optional[BaseException]) -> None:
            return None

        return functools.wraps(fn)(guard_async_gen(fn, start, finish))
    if is_async_callable(fn):
        afn = fn

        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            await limiter._enter_async(key)
            return await afn(*args, **kwargs)

        return functools.wraps(fn)(async_wrapper)
    if inspect.isgeneratorfunction(fn):

        def gen_wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            limiter._enter(key)
            return (yield from fn(*args, **kwargs))

        return functools.wraps(fn)(gen_wrapper)
    if not callable(fn):
        raise TypeError(f"RateLimiter decorates callables, got {fn!r}")

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        limiter._enter(key)
        return refuse_coroutine(fn(*args, **kwargs))

    return functools.wraps(fn)(wrapper)
