"""The bulkhead (DESIGN §5): a permit semaphore with a FIFO wait queue and
priority load shedding, for threads and asyncio."""

from __future__ import annotations

import asyncio
import functools
import inspect
import weakref
from typing import Any, Callable, Dict, Generator, Mapping, Optional, Tuple, TypeVar, Union, cast, overload

from . import _listeners, _native, _numbers, _registry, _seconds
from ._callables import guard_async_gen, is_async_callable, refuse_method_descriptor
from ._deadline import remaining_ns
from ._errors import SharedRegionError
from ._seconds import Seconds
from ._stack import HeldStack

__all__ = ["Bulkhead", "BulkheadPermit", "BulkheadTicket", "PRIORITIES", "RejectionListener"]

F = TypeVar("F", bound=Callable[..., Any])

BulkheadPermit = _native.BulkheadPermit
BulkheadTicket = _native.BulkheadTicket

PRIORITIES = ("critical", "high", "normal", "low")

_GRANTED = "granted"
_TIMEOUT = "timeout"


#: ``listener(bulkhead, error)`` for :meth:`Bulkhead.on_rejected`; ``error`` is
#: the :class:`~seawall.BulkheadFullError` about to be raised.
RejectionListener = Callable[["Bulkhead", BaseException], Any]


def _rejected_hook(ref: "weakref.ReferenceType[Bulkhead]") -> Callable[[BaseException], None]:
    # Weak: the native core keeps the hook, and the bulkhead keeps the core.
    def rejected(error: BaseException) -> None:
        b = ref()
        if b is not None:
            _listeners.tell(b._on_rejected, (b, error), "bulkhead rejected")

    return rejected


class _Default:
    def __repr__(self) -> str:
        return "<queue_timeout>"


_DEFAULT: Any = _Default()


def _grant(fut: "asyncio.Future[str]") -> None:
    """Run on the waiter's loop (``call_soon_threadsafe``) when its ticket is granted."""
    if not fut.done():
        fut.set_result(_GRANTED)


def _expire(fut: "asyncio.Future[str]") -> None:
    if not fut.done():
        fut.set_result(_TIMEOUT)


def _share(value: Any, priority: str) -> float:
    """One priority's share (percent): a number, else a config error naming
    ``shares`` (the keyword the user wrote) and the priority."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        from ._errors import SeawallConfigError

        raise SeawallConfigError(
            f"invalid shares: the share of {priority!r} must be a percentage, got {value!r}", "shares"
        )
    return _numbers.real(value, "shares")


class Bulkhead:
    """A bulkhead: at most ``max_concurrent`` calls at once, up to ``max_queue``
    more waiting (FIFO, each at most ``queue_timeout`` seconds and never past the
    :func:`~seawall.current_deadline`, e.g. a request's; ``None`` waits as
    long as it takes), the rest refused with
    :class:`~seawall.BulkheadFullError` (``active``, ``queued``, ``reason``).

    Load shedding: ``shares={"critical": 100, "high": 80, "normal": 50,
    "low": 20}`` (percent of ``max_concurrent``; omitted priorities keep 100)
    gives each priority a limit ``max(1, floor(max_concurrent * share / 100))``;
    a call whose priority is at its limit is refused at once (``reason="shed"``),
    never queued. A released permit goes straight to the oldest waiter.

    Threads wait with the GIL released; asyncio tasks await a future resolved on
    release (no polling). A waiter that times out or is cancelled leaves the
    queue at once and never holds or loses a permit.

    ``shared="pool"`` puts the bulkhead in ``/dev/shm/seawall-semaphore-pool``:
    every process of the host that opens that name (with the same
    ``max_concurrent``, ``max_queue`` and ``shares``; another configuration
    raises :class:`~seawall.SharedRegionError`) shares one set of permits and
    one FIFO queue, with ``max_concurrent`` at most 4096 and ``max_queue`` at
    most 1024 (a local bulkhead takes up to 1048575 permits and 32768
    waiters). A blocked thread of a shared bulkhead sleeps on the region's
    release counter, which a release in any process wakes (a futex on Linux;
    it looks again at least every 2 ms); an asyncio waiter looks at its place
    in the queue every 2 ms (a permit handed to it is held for it meanwhile). The permits and
    queue places of worker processes that were killed come back by themselves: the next
    caller that would be refused or queued gives them back (DESIGN §8, self-healing).

    Use it as a decorator (``@bulkhead`` or ``@bulkhead(priority="high")``, on
    sync, ``async def`` and generator functions), as ``with bulkhead:`` /
    ``async with bulkhead:``, or with the permit objects of :meth:`acquire`,
    :meth:`acquire_async`, :meth:`try_acquire` and :meth:`enqueue`.
    """

    def __init__(
        self,
        max_concurrent: int = 10,
        max_queue: int = 0,
        *,
        queue_timeout: Optional[Seconds] = None,
        shares: Optional[Mapping[str, float]] = None,
        priority: str = "normal",
        name: Optional[str] = None,
        shared: Optional[str] = None,
        _poll_only: bool = False,
        _poll_interval: Optional[float] = None,
    ) -> None:
        share_tuple: Optional[Tuple[float, float, float, float]] = None
        _numbers.text(priority, "priority")
        _numbers.opt(_numbers.text, name, "name")
        _numbers.opt(_numbers.text, shared, "shared")
        if shares is not None:
            if not isinstance(shares, Mapping):
                raise _numbers.config_error("shares", f"must be a mapping of priority to percent, got {shares!r}")
            unknown = set(shares) - set(PRIORITIES)
            if unknown:
                from ._errors import SeawallConfigError

                raise SeawallConfigError(
                    f"invalid shares: unknown priorities {sorted(unknown)}; use {PRIORITIES}", "shares"
                )
            c, h, n, lo = (_share(shares.get(p, 100.0), p) for p in PRIORITIES)
            share_tuple = (c, h, n, lo)
        self._native = _native.Bulkhead(
            max_concurrent=_numbers.whole(max_concurrent, "max_concurrent"),
            max_queue=_numbers.whole(max_queue, "max_queue"),
            shares=share_tuple,
            name=name if name is not None else shared,
            shared=shared,
            _poll_only=_poll_only,
            _poll_interval=_poll_interval,
        )
        if queue_timeout is not None:
            queue_timeout = _numbers.duration(queue_timeout, "queue_timeout")
            _seconds.to_ns(queue_timeout, "queue_timeout")
        self.queue_timeout = queue_timeout
        self._region: Optional[str] = shared  # the shared region, for metrics
        self._native.limit(priority)  # validates the name
        self.priority = priority
        self._held: HeldStack[Any] = HeldStack("bulkhead")
        self._on_rejected: Tuple[RejectionListener, ...] = ()
        if self.name is not None:
            _registry.register(self)

    @property
    def name(self) -> Optional[str]:
        return self._native.name

    @property
    def active(self) -> int:
        """Permits held now."""
        return self._native.active

    @property
    def queued(self) -> int:
        """Waiters queued now."""
        return self._native.queued

    @property
    def max_concurrent(self) -> int:
        return self._native.max_concurrent

    @property
    def shared(self) -> bool:
        """Whether the bulkhead lives in a region shared by processes."""
        return self._native.shared

    @property
    def max_queue(self) -> int:
        return self._native.max_queue

    def limit(self, priority: str = "normal") -> int:
        """The most permits ``priority`` may hold."""
        return self._native.limit(priority)

    def metrics(self) -> Dict[str, Any]:
        """``active``, ``queued``, ``max_concurrent``, ``max_queue``, ``shared``,
        ``permits_outstanding`` / ``tickets_outstanding`` (held by callers of
        every process; shared only, else ``None``), and this process's lifetime
        ``admitted``, ``rejected_shed``, ``rejected_full``, ``rejected_timeout``.
        For a shared bulkhead ``active`` and ``queued`` count every process."""
        return self._native.metrics()

    def reclaim_abandoned(self) -> Tuple[int, int]:
        """Shared bulkheads: give back now the permits, and cancel the queue
        places, of processes that no longer exist (a worker killed mid-call or
        while waiting; on Linux also one killed but not yet reaped by its
        parent, a zombie); each permit goes to the oldest waiter or back to the
        pool. Not needed: the next caller that would be refused or queued does
        the same by itself (DESIGN §8, self-healing).
        Returns ``(permits, tickets)``; ``(0, 0)`` for a local bulkhead. Only
        right where every sharer sees the same process ids (one pid namespace)."""
        return self._native.reclaim_abandoned()

    @staticmethod
    def unlink_shared(name: str) -> None:
        """Remove the shared bulkhead region ``name`` (a missing one is fine).
        Processes attached to it keep theirs; the next open creates a new one."""
        _native.Bulkhead.unlink_shared(name)

    # -- hooks ---------------------------------------------------------------

    def on_rejected(self, listener: RejectionListener) -> RejectionListener:
        """Call ``listener(bulkhead, error)`` for each call the bulkhead refuses,
        before the :class:`~seawall.BulkheadFullError` is raised; ``error.reason``
        says why (``full``, ``shed``, ``timeout``: Node's ``reject`` event), in
        every form (decorator, ``with``, ``acquire``, ``try_acquire``,
        ``enqueue``, async). Usable as a decorator; returns ``listener``. A
        listener that raises an ``Exception`` is logged (logger ``seawall``) and
        changes nothing (DESIGN §1)."""
        self._on_rejected = self._on_rejected + (_listeners.checked(listener),)
        self._native.set_events(_rejected_hook(weakref.ref(self)))
        return listener

    def remove_listener(self, listener: Any) -> None:
        """Stop calling ``listener`` (from :meth:`on_rejected`)."""
        self._on_rejected = _listeners.without(self._on_rejected, listener)
        if not self._on_rejected:
            self._native.set_events(None)

    # -- permits -------------------------------------------------------------

    def acquire(
        self, priority: Optional[str] = None, timeout: Union[Seconds, None, _Default] = _DEFAULT
    ) -> "_native.BulkheadPermit":
        """A permit, waiting (GIL released) at most ``timeout`` seconds (default
        ``queue_timeout``). Release it with ``permit.release()`` or ``with permit:``."""
        t = self._timeout(timeout)
        return self._native.acquire(priority or self.priority, t)

    def _timeout(self, timeout: Union[Seconds, None, _Default]) -> Optional[float]:
        """``timeout`` in seconds (``queue_timeout`` by default)."""
        if isinstance(timeout, _Default):
            return self.queue_timeout
        return None if timeout is None else _numbers.duration(timeout, "timeout")

    def try_acquire(self, priority: Optional[str] = None) -> "_native.BulkheadPermit":
        """A permit now, or :class:`~seawall.BulkheadFullError`; never waits."""
        return self._native.try_acquire(priority or self.priority)

    def enqueue(self, priority: Optional[str] = None) -> Union["_native.BulkheadPermit", "_native.BulkheadTicket"]:
        """The core protocol, for other event loops: a permit now, or a
        :class:`BulkheadTicket` to poll (``granted()``), ``take()`` or
        ``cancel()``."""
        return self._native.enqueue(priority or self.priority)

    async def acquire_async(
        self, priority: Optional[str] = None, timeout: Union[Seconds, None, _Default] = _DEFAULT
    ) -> "_native.BulkheadPermit":
        """A permit for asyncio code: waits on a future that a release resolves
        (at most ``timeout`` seconds, default ``queue_timeout``). Cancelling the
        awaiting task leaves the queue at once; a permit granted in that same
        instant is passed on to the next waiter."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[str] = loop.create_future()
        native = self._native
        got = native.enter_async(priority or self.priority, loop, fut)
        if not isinstance(got, int):
            return got
        ticket = got
        t = self._timeout(timeout)
        # Like a sync wait (native), never past the current deadline (a request's).
        left = remaining_ns()
        if left is not None:
            t = left / 1e9 if t is None else min(t, left / 1e9)
        expiry = loop.call_later(t, _expire, fut) if t is not None else None
        poll = native.poll_interval
        if poll is not None:
            # Releases in other processes cannot wake this one: look again. A look
            # that finds the ticket granted takes its permit (shared bulkheads), so
            # only this task looks, and a grant is always followed by adopt() or,
            # if the task is cancelled first, by abandon(), which gives it back.
            def recheck() -> None:
                if fut.done():
                    return
                try:
                    granted = native.is_granted(ticket)
                except Exception as e:  # the ticket is gone: nothing is held
                    fut.set_exception(e)
                    return
                if granted:
                    fut.set_result(_GRANTED)
                else:
                    loop.call_later(poll, recheck)

            loop.call_later(poll, recheck)
        try:
            outcome = await fut
        except BaseException:
            native.abandon(ticket)
            raise
        finally:
            if expiry is not None:
                expiry.cancel()
        if outcome == _GRANTED or native.is_granted(ticket):
            return native.adopt(ticket)
        raise cast(BaseException, native.abandon(ticket, True))

    # -- decorator -----------------------------------------------------------

    @overload
    def __call__(self, fn: F) -> F: ...

    @overload
    def __call__(self, fn: None = None, *, priority: Optional[str] = None) -> Callable[[F], F]: ...

    def __call__(self, fn: Optional[Callable[..., Any]] = None, *, priority: Optional[str] = None) -> Any:
        """``@bulkhead`` or ``@bulkhead(priority="high")``."""
        if fn is None:
            return lambda f: self._decorate(f, priority or self.priority)
        return self._decorate(fn, priority or self.priority)

    def _decorate(self, fn: Callable[..., Any], priority: str) -> Callable[..., Any]:
        refuse_method_descriptor(fn, "Bulkhead")
        self._native.limit(priority)  # validates the name now, not at the first call
        if inspect.isasyncgenfunction(fn):

            async def start() -> Any:
                return await self.acquire_async(priority)

            def finish(permit: Any, _exc: Optional[BaseException]) -> None:
                permit.release()

            return functools.wraps(fn)(guard_async_gen(fn, start, finish))
        if is_async_callable(fn):

            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                permit = await self.acquire_async(priority)
                try:
                    return await fn(*args, **kwargs)
                finally:
                    permit.release()

            return functools.wraps(fn)(async_wrapper)
        if inspect.isgeneratorfunction(fn):

            def gen_wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
                permit = self.acquire(priority)
                try:
                    return (yield from fn(*args, **kwargs))
                finally:
                    permit.release()

            return functools.wraps(fn)(gen_wrapper)
        if not callable(fn):
            raise TypeError(f"Bulkhead decorates callables, got {fn!r}")
        guarded = _native.Guarded(
            fn, bulkhead=self._native, priority=priority, queue_timeout=self.queue_timeout
        )
        return functools.update_wrapper(guarded, fn)

    # -- with / async with ---------------------------------------------------

    def __enter__(self) -> "Bulkhead":
        self._held.push(self.acquire())
        return self

    def __exit__(self, *exc: Any) -> None:
        self._held.pop().release()

    async def __aenter__(self) -> "Bulkhead":
        self._held.push(await self.acquire_async())
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._held.pop().release()

    def __repr__(self) -> str:
        try:
            occupancy = f"active={self.active}/{self.max_concurrent} queued={self.queued}/{self.max_queue}"
        except SharedRegionError:
            # A repr never raises: an overwritten region is said, not counted.
            occupancy = "region corrupt"
        return f"<Bulkhead name={self.name!r} {occupancy}>"
