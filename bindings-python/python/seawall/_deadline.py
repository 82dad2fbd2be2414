"""Deadline budgets (DESIGN §6) and timeouts.

A :class:`Deadline` is a budget of seconds started now. Entered as a context
manager it becomes the *current* deadline of this thread or task (a child of
the one already current: it never outlives it), which :class:`seawall.Retry`
honours — it never sleeps past it — and which your own code can read with
:func:`current_deadline` to size its timeouts (``deadline.allocate(2.0)``).

:func:`timeout` bounds an ``async`` call for real: at the deadline the awaited
call is cancelled and :class:`~seawall.DeadlineExceededError` (a
``TimeoutError``) is raised. Python cannot interrupt a running sync function;
for those, a timeout only sets the current deadline.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import functools
import inspect
import logging
from typing import Any, Awaitable, Callable, Optional, Tuple, TypeVar

from . import _listeners, _native
from ._errors import DeadlineExceededError
from ._callables import is_async_callable
from ._numbers import function, opt
from ._seconds import Seconds, to_ns

__all__ = ["Deadline", "current_deadline", "timeout", "Timeout"]

log = logging.getLogger("seawall")

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

# The deadlines entered in this thread or task, innermost last, each as
# (the object entered, the deadline in force). The state of an entry lives
# here, never on the object, so one Deadline or Timeout may be entered again,
# nested, or by many threads and tasks at once: a task sees a copy of its
# creator's stack, and its own entries never leak into another's.
_Entry = Tuple["Deadline", "Deadline"]
_current: contextvars.ContextVar[Tuple[_Entry, ...]] = contextvars.ContextVar(
    "seawall-deadlines", default=()
)


E = TypeVar("E", bound=Tuple[Any, ...])


def _pop(var: "contextvars.ContextVar[Tuple[E, ...]]", owner: object, what: str) -> E:
    """Remove and return the innermost entry of ``owner`` from ``var``."""
    stack = var.get()
    for i in range(len(stack) - 1, -1, -1):
        if stack[i][0] is owner:
            var.set(stack[:i] + stack[i + 1 :])
            return stack[i]
    raise RuntimeError(f"{what} exited in a thread or task it was not entered in")


def _now_ns(clock: Optional[Callable[[], float]]) -> int:
    if clock is None:
        return int(round(_native.monotonic() * 1e9))
    return to_ns(clock(), "clock()")


class Deadline:
    """A time budget of ``total`` seconds started now (or at ``start`` seconds
    of ``clock``). ``remaining()`` saturates at 0; it is expired exactly at
    ``start + total``; ``allocate(max)`` is ``min(max, remaining())``. Times are
    seconds of the monotonic clock (``seawall.monotonic()``) unless ``clock`` is
    given.

    Entered (``with deadline as d:``) it is the :func:`current_deadline` of
    this thread or task until the block ends; ``d`` is the deadline in force,
    which is this one or, when the deadline already current ends sooner, a
    child of that one (never outliving it). The same object may be entered
    again, nested or concurrently: each entry is separate."""

    __slots__ = ("_d", "_clock")

    def __init__(
        self,
        total: Seconds,
        *,
        clock: Optional[Callable[[], float]] = None,
        _native_deadline: Optional[_native.Deadline] = None,
    ) -> None:
        self._clock = opt(function, clock, "clock")
        if _native_deadline is not None:
            self._d = _native_deadline
        else:
            self._d = _native.Deadline(to_ns(total, "total"), _now_ns(clock))

    def _now(self) -> int:
        return _now_ns(self._clock)

    def remaining(self) -> float:
        """Seconds left (0.0 once expired)."""
        return self._d.remaining_ns(self._now()) / 1e9

    def remaining_ns(self) -> int:
        """Nanoseconds left."""
        return self._d.remaining_ns(self._now())

    def expired(self) -> bool:
        return self._d.expired(self._now())

    def allocate(self, max_seconds: Seconds) -> float:
        """How long a step may take: ``min(max_seconds, remaining())``."""
        return self._d.allocate_ns(to_ns(max_seconds, "max_seconds"), self._now()) / 1e9

    def child(self, total: Seconds) -> "Deadline":
        """A budget of at most ``total`` seconds that never outlives this one."""
        return Deadline(
            0.0,
            clock=self._clock,
            _native_deadline=self._d.child(to_ns(total, "total"), self._now()),
        )

    def __enter__(self) -> "Deadline":
        stack = _current.get()
        in_force = self
        if stack:
            parent = stack[-1][1]
            if parent._d.end_ns < self._d.end_ns:
                child = parent._d.child(self._d.end_ns - self._d.start_ns, self._d.start_ns)
                in_force = Deadline(0.0, clock=self._clock, _native_deadline=child)
        _current.set(stack + ((self, in_force),))
        return in_force

    def __exit__(self, *exc: Any) -> None:
        _pop(_current, self, "Deadline")

    def __repr__(self) -> str:
        return f"<Deadline remaining={self.remaining():.3f}s>"


def current_deadline() -> Optional[Deadline]:
    """The deadline in force in this thread or task (the innermost entered), if any."""
    stack = _current.get()
    return stack[-1][1] if stack else None


def remaining_ns() -> Optional[int]:
    """Nanoseconds left of :func:`current_deadline` (``None``: there is none):
    what bounds a bulkhead's queue wait."""
    stack = _current.get()
    return stack[-1][1].remaining_ns() if stack else None


async def run_within(
    awaitable: Awaitable[T], seconds: float, on_expiry: Optional["Timeout"] = None
) -> T:
    """Await ``awaitable``, cancelling it after ``seconds`` and raising
    :class:`~seawall.DeadlineExceededError` (``on_expiry``, the timeout that
    set the limit, hears of it first). A cancellation from outside (or a
    ``TimeoutError`` raised by the call itself) propagates unchanged."""
    if hasattr(asyncio, "timeout"):  # Python 3.11+
        cm = asyncio.timeout(seconds)
        try:
            async with cm:
                return await awaitable
        except TimeoutError:
            if cm.expired():
                if on_expiry is not None:
                    on_expiry._timed_out(seconds)
                raise DeadlineExceededError(f"timed out after {seconds:.3f} s") from None
            raise
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    fired = False

    def fire() -> None:
        nonlocal fired
        fired = True
        if task is not None:
            task.cancel()

    handle = loop.call_later(seconds, fire)
    try:
        return await awaitable
    except asyncio.CancelledError:
        if fired:
            if on_expiry is not None:
                on_expiry._timed_out(seconds)
            raise DeadlineExceededError(f"timed out after {seconds:.3f} s") from None
        raise
    finally:
        handle.cancel()


class _CancelAt:
    """Before Python 3.11 (no ``asyncio.timeout``): cancel the current task after
    ``seconds`` and remember having done so."""

    def __init__(self, seconds: float) -> None:
        task = asyncio.current_task()
        self.fired = False

        def fire() -> None:
            self.fired = True
            if task is not None:
                task.cancel()

        self._handle = asyncio.get_running_loop().call_later(seconds, fire)

    def close(self) -> None:
        self._handle.cancel()


# The entries of Timeout objects in this thread or task, innermost last:
# (the Timeout, the Deadline it entered, the async canceller or None, the
# seconds the canceller was given).
_timeouts: contextvars.ContextVar[Tuple[Tuple["Timeout", Deadline, Any, float], ...]] = contextvars.ContextVar(
    "seawall-timeouts", default=()
)


class Timeout:
    """``timeout(seconds)``: an async context manager, a sync context manager
    and a decorator. Async code is cancelled at the deadline
    (:class:`~seawall.DeadlineExceededError`); sync code gets the deadline as
    :func:`current_deadline` only (Python cannot interrupt it).

    Each entry (each ``with``/``async with`` block, each call of a decorated
    function) starts its own ``seconds`` from that moment, so one object may be
    reused, nested, and used by many threads and tasks at once.

    :meth:`on_timeout` listeners hear of each call that ran out of time."""

    def __init__(self, seconds: Seconds, *, clock: Optional[Callable[[], float]] = None) -> None:
        if isinstance(seconds, datetime.timedelta):
            seconds = seconds.total_seconds()
        to_ns(seconds, "timeout")
        self.seconds = float(seconds)
        self._clock = opt(function, clock, "clock")
        self._on_timeout: Tuple[TimeoutListener, ...] = ()

    def on_timeout(self, listener: "TimeoutListener") -> "TimeoutListener":
        """Call ``listener(timeout, seconds)`` for each call or block that ran
        out of time (Node's ``timeout`` event), ``seconds`` the limit that ran
        out (this timeout's, or less when an enclosing deadline left less):
        async code as it is cancelled, before
        :class:`~seawall.DeadlineExceededError` is raised; sync code (which
        Python cannot interrupt) when it ends past this timeout's own
        ``seconds``. Also in a :class:`~seawall.Policy`. Usable as a decorator;
        returns ``listener``. A listener that raises an ``Exception`` is logged
        (logger ``seawall``) and changes nothing (DESIGN §1)."""
        self._on_timeout = self._on_timeout + (_listeners.checked(listener),)
        return listener

    def remove_listener(self, listener: Any) -> None:
        """Stop calling ``listener`` (from :meth:`on_timeout`)."""
        self._on_timeout = _listeners.without(self._on_timeout, listener)

    def _watched(self) -> bool:
        """Whether a time-out would be heard (a listener, or INFO logging)."""
        return bool(self._on_timeout) or log.isEnabledFor(logging.INFO)

    def _timed_out(self, seconds: float) -> None:
        """Report one call that ran out of ``seconds``: the ``seawall`` logger
        (INFO), then every listener."""
        log.info("seawall: timeout: a call ran out of its %.3f s", seconds)
        _listeners.tell(self._on_timeout, (self, seconds), "timeout")

    def _overran(self, entered: Deadline) -> None:
        """A sync call or block ended: report it if it ran past ``seconds``."""
        if self._watched() and entered.expired():
            self._timed_out(self.seconds)

    def __call__(self, fn: F) -> F:
        seconds, clock = self.seconds, self._clock
        if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
            raise TypeError(
                "timeout() cannot bound a generator (it runs between the caller's steps): "
                "bound each step, or the code that consumes it"
            )
        if is_async_callable(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with Deadline(seconds, clock=clock) as d:
                    return await run_within(fn(*args, **kwargs), d.remaining(), self)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            entered = Deadline(seconds, clock=clock)
            with entered:
                try:
                    return fn(*args, **kwargs)
                finally:
                    self._overran(entered)

        return wrapper  # type: ignore[return-value]

    def _enter(self, asynchronous: bool) -> Deadline:
        entered = Deadline(self.seconds, clock=self._clock)
        d = entered.__enter__()
        cm: Any = None
        left = 0.0
        if asynchronous:
            left = d.remaining()
            if hasattr(asyncio, "timeout"):  # Python 3.11+
                cm = asyncio.timeout(left)
            else:
                cm = _CancelAt(left)
        _timeouts.set(_timeouts.get() + ((self, entered, cm, left),))
        return d

    def __enter__(self) -> Deadline:
        return self._enter(False)

    def __exit__(self, *exc: Any) -> None:
        _, entered, cm, _ = _pop(_timeouts, self, "Timeout")
        entered.__exit__()
        if cm is None:
            self._overran(entered)

    async def __aenter__(self) -> Deadline:
        d = self._enter(True)
        cm = _timeouts.get()[-1][2]
        if not isinstance(cm, _CancelAt):
            try:
                await cm.__aenter__()
            except BaseException:
                self.__exit__()
                raise
        return d

    async def __aexit__(self, et: Any, exc: Optional[BaseException], tb: Any) -> bool:
        _, entered, cm, left = _pop(_timeouts, self, "Timeout")
        try:
            if cm is not None:
                if isinstance(cm, _CancelAt):
                    cm.close()
                    if cm.fired and isinstance(exc, asyncio.CancelledError):
                        self._timed_out(left)
                        raise DeadlineExceededError(f"timed out after {self.seconds:.3f} s") from None
                    return False
                try:
                    await cm.__aexit__(et, exc, tb)
                except TimeoutError:
                    if cm.expired():
                        self._timed_out(left)
                        raise DeadlineExceededError(
                            f"timed out after {self.seconds:.3f} s"
                        ) from None
                    raise
        finally:
            entered.__exit__()
        return False


#: ``listener(timeout, seconds)`` for :meth:`Timeout.on_timeout`.
TimeoutListener = Callable[[Timeout, float], Any]


def timeout(seconds: Seconds, *, clock: Optional[Callable[[], float]] = None) -> Timeout:
    """A deadline of ``seconds`` for a block or a function: see :class:`Timeout`."""
    return Timeout(seconds, clock=clock)
