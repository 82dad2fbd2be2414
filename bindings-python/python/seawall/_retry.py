"""Retry (DESIGN §4): attempts, backoff with jitter, retry budget or throttle,
a total deadline and the server's Retry-After — decided by the core.

The attempt loop lives here (and, for the first attempt of a sync function, in
the native decorator); every "retry, after how long, or give up" comes from
``seawall-core``'s ``RetryPolicy.decide``: attempts left, the backoff delay
raised to the exception's ``retry_after``, a retry whose sleep would end at or
after the deadline is never made, then the throttle's verdict, then the budget
(withdrawn only for a retry that will happen).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import functools
import inspect
import logging
import time
from dataclasses import dataclass
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Dict,
    Iterator,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    cast,
)

from . import _listeners, _native, _numbers, _registry, _seconds
from ._callables import is_async_callable, refuse_method_descriptor
from ._classify import ExceptionSpec, matcher
from ._seconds import Seconds
from ._deadline import current_deadline, run_within
from ._errors import ResultRejected

log = logging.getLogger("seawall")

__all__ = [
    "Retry",
    "Backoff",
    "RetryState",
    "Attempt",
    "RetryBudget",
    "RetryThrottle",
    "linear_backoff",
    "set_testing",
    "is_testing",
]

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")

RetryBudget = _native.RetryBudget
RetryThrottle = _native.RetryThrottle

_JITTERS = ("none", "full", "equal", "decorrelated", "proportional")


#: :class:`Backoff`'s ``max`` left out (DESIGN §4: 10 s).
_DEFAULT_MAX = 10.0
_U32_MAX = 2**32 - 1


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: ``exp(n) = min(max, base * multiplier**(n-1))``
    seconds before retry ``n``, randomised by ``jitter`` (AWS "Exponential
    Backoff and Jitter", 2015): ``"none"``; ``"full"`` ``U[0, exp(n)]``;
    ``"equal"`` ``U[exp(n)/2, exp(n)]``; ``"decorrelated"``
    ``min(max, U[base, 3 * previous])``; ``"proportional"``
    ``exp(n) * U[1-f, 1+f]`` with ``f = jitter_factor`` (default 0.2). Defaults:
    0.1 s, doubling, capped at 10 s, full jitter. ``base=0`` waits not at all
    (as ``Retry(backoff=0)``).

    Other shapes of wait are given to ``Retry(backoff=...)`` directly: a
    number or ``timedelta`` (a constant delay, ``0`` for none), a list of
    delays (the last repeats), :func:`linear_backoff`, or any function
    ``(attempt, exception) -> seconds``."""

    base: Seconds = 0.1
    multiplier: float = 2.0
    max: Seconds = _DEFAULT_MAX
    jitter: str = "full"
    jitter_factor: Optional[float] = None

    def __post_init__(self) -> None:
        # Validates every field (SeawallConfigError naming it); ``base=0`` is
        # the core's too: every delay 0.
        object.__setattr__(self, "_native", self._make())

    def _numbers(self) -> Tuple[float, float, float, Optional[float]]:
        """``base``, ``multiplier``, ``max``, ``jitter_factor`` checked
        (``SeawallConfigError`` for a bool or an overflow), in seconds."""
        real, secs = _numbers.real, _numbers.duration
        _numbers.text(self.jitter, "jitter")
        base, max_ = secs(self.base, "base"), secs(self.max, "max")
        # Checked here, not by the core, so that a base above the default cap is
        # the base's fault: the user may never have set the cap.
        if max_ == _DEFAULT_MAX and _seconds.to_ns(base, "base") > _seconds.to_ns(max_, "max"):
            raise _numbers.config_error(
                "base", f"must not be more than max ({max_} seconds by default: give a larger max), got {base}"
            )
        return (
            base,
            real(self.multiplier, "multiplier"),
            max_,
            _numbers.opt(real, self.jitter_factor, "jitter_factor"),
        )

    def _make(self) -> _native.Backoff:
        base, multiplier, max_, factor = self._numbers()
        return _native.Backoff(base, multiplier, max_, self.jitter, factor)

    def delay(self, attempt: int, previous: Seconds = 0.0) -> float:
        """A fresh random delay (seconds) before retry ``attempt`` (a whole number
        ``1 <= attempt <= 2**32 - 1``); ``previous`` is the delay before it in
        seconds (decorrelated jitter grows from it). Other values:
        :class:`~seawall.SeawallConfigError` naming the argument."""
        if isinstance(attempt, bool) or not isinstance(attempt, int):
            _numbers.whole(attempt, "attempt")  # raises the bool or type error
        if not 1 <= attempt <= _U32_MAX:
            raise _numbers.config_error("attempt", f"must be a whole number between 1 and {_U32_MAX}, got {attempt}")
        native: _native.Backoff = getattr(self, "_native")
        return native.delay(int(attempt), _numbers.duration(previous, "previous"))


#: What ``Retry(backoff=...)`` takes: see :class:`Backoff`.
WaitSpec = Union[Backoff, Seconds, Sequence[Seconds], Callable[[int, BaseException], Any]]


def linear_backoff(start: Seconds, step: Seconds, max: Optional[Seconds] = None) -> Callable[[int, BaseException], float]:
    """Delays growing linearly: ``start + step * (n - 1)`` seconds before retry
    ``n`` (numbers or ``timedelta``), capped at ``max`` when given; no jitter.
    For ``Retry(backoff=linear_backoff(0.1, 0.1, max=1.0))``."""
    first = _wait_seconds(start, "start")
    inc = _wait_seconds(step, "step")
    cap = None if max is None else _wait_seconds(max, "max")

    def linear(attempt: int, _exc: BaseException) -> float:
        d = first + inc * (attempt - 1)
        return d if cap is None else min(d, cap)

    return linear


def _wait_seconds(value: Any, field: str) -> float:
    """A configured wait: seconds >= 0 as a number or ``timedelta``."""
    seconds = _numbers.duration(value, field)
    _seconds.to_ns(seconds, field)  # refuses negative, NaN, infinite
    return seconds


def _as_wait(spec: Any) -> Tuple[Backoff, Optional[Callable[[int, BaseException], Any]]]:
    """``(exponential backoff for the core, other wait or None)`` for
    ``Retry(backoff=spec)``. The core decides every retry; a wait it does not
    compute is handed to it as a lower bound of the delay (like a Retry-After
    hint) over a 1 ns backoff, so attempts, deadline, budget and throttle
    apply unchanged."""
    if spec is None:
        return Backoff(), None
    if isinstance(spec, Backoff):
        return spec, None
    if isinstance(spec, (int, float, datetime.timedelta)) and not isinstance(spec, bool):
        constant = _wait_seconds(spec, "backoff")
        return _NO_BACKOFF, lambda _a, _e: constant
    if isinstance(spec, (list, tuple)):
        if not spec:
            from ._errors import SeawallConfigError

            raise SeawallConfigError("invalid backoff: a list of delays needs at least one", "backoff")
        delays = [_wait_seconds(d, "backoff") for d in spec]
        return _NO_BACKOFF, lambda a, _e: delays[min(a, len(delays)) - 1]
    if callable(spec):
        return _NO_BACKOFF, spec
    raise _numbers.config_error(
        "backoff",
        f"must be a seawall.Backoff, seconds, a timedelta, a list of delays or a function "
        f"(attempt, exception) -> seconds, got {spec!r}",
    )


@dataclass(frozen=True)
class RetryState:
    """What ``before_sleep`` is told: the ``attempt`` that failed (1-based), its
    ``exception``, the ``delay`` (seconds) about to be slept, and the seconds
    ``elapsed`` since the first attempt started."""

    name: Optional[str]
    attempt: int
    exception: BaseException
    delay: float
    elapsed: float
    #: The returned value ``retry_on_result`` rejected (``exception`` is then a
    #: :class:`~seawall.ResultRejected`), else ``None``.
    result: Any = None
    #: For ``on_give_up``: why no retry follows; ``None`` before a retry.
    reason: Optional[str] = None


class Attempt:
    """One attempt of the block form: use it as ``with attempt:``. An exception
    that may be retried is kept (the loop then retries or re-raises it); any
    other propagates at once."""

    __slots__ = ("number", "_exc", "_retry_on")

    def __init__(self, number: int, retry_on: Callable[[BaseException], bool]) -> None:
        self.number = number
        self._exc: Optional[BaseException] = None
        self._retry_on = retry_on

    def __enter__(self) -> "Attempt":
        return self

    def __exit__(self, et: Any, exc: Optional[BaseException], tb: Any) -> bool:
        if exc is None or not isinstance(exc, Exception) or not self._retry_on(exc):
            return False
        self._exc = exc
        return True

    def __repr__(self) -> str:
        return f"<Attempt {self.number}>"


# The core's backoff when the wait is computed here: 1 ns, so the delay is the
# computed one (given to the core as a lower bound).
_NO_BACKOFF = Backoff(base=1e-9, multiplier=1.0, max=1e-9, jitter="none")

_testing: Optional[Tuple[bool, Optional[int]]] = None


def set_testing(testing: bool, *, attempts: Optional[int] = None) -> None:
    """Test mode for every :class:`Retry` of the process (stamina's
    ``set_testing``): retries do not sleep (``before_sleep`` still hears of each
    delay), and with ``attempts`` no call makes more than that many attempts
    (``attempts=1``: no retry at all). ``set_testing(False)`` restores both."""
    global _testing
    if attempts is not None:
        attempts = _numbers.whole(attempts, "attempts")
        if attempts < 1:
            from ._errors import SeawallConfigError

            raise SeawallConfigError(f"invalid attempts: must be at least 1, got {attempts}", "attempts")
    _testing = (True, attempts) if testing else None


def is_testing() -> bool:
    """Whether :func:`set_testing` turned test mode on."""
    return _testing is not None


def _sleep_seconds(delay_ns: int) -> float:
    return 0.0 if _testing is not None else delay_ns / 1e9


def _callable(listener: Any) -> Any:
    if not callable(listener):
        raise TypeError(f"listener must be callable, got {listener!r}")
    return listener


def _tell(listeners: Tuple[Callable[[RetryState], Any], ...], state: RetryState) -> None:
    """Call each listener (see :func:`_listeners.tell`)."""
    _listeners.tell(listeners, (state,), "retry")


def _retry_after_attr(exc: BaseException) -> Any:
    """``exc.retry_after`` as given (read by :func:`_seconds.hint_to_ns`)."""
    return getattr(exc, "retry_after", None)


# Without a deadline, the horizon no retry may sleep past: 2**62 ns (about 146
# years), within what ``time.sleep`` accepts (it overflows from about 292
# years). A longer delay (an endless Retry-After) gives up, as past a deadline.
_NO_DEADLINE_NS = 2**62


def _task_cancelling() -> bool:
    """Whether the running task has a cancellation pending (3.11+): a retry then
    would swallow the caller's cancel."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return False
    cancelling = getattr(task, "cancelling", None)
    return bool(task is not None and cancelling is not None and cancelling())


class Retry:
    """Retry a call (decorator, ``async``, or ``for attempt in retry: with
    attempt:`` block form), in the spirit of tenacity and stamina.

    * ``attempts``: attempts in all, the first included (default 3).
    * ``backoff``: a :class:`Backoff` (default 0.1 s doubling to 10 s, full
      jitter); or seconds / a ``timedelta`` (constant, ``0`` for none), a list
      of delays (the last repeats), :func:`linear_backoff`, or a function
      ``(attempt, exception) -> seconds`` (``attempt`` is the 1-based attempt
      that failed). A Retry-After hint still raises the delay to at least the
      hint. :func:`set_testing` makes every retry not sleep.
    * ``retry_on``: exception types or a predicate (default ``Exception``). The
      caller's own cancellation (``asyncio.CancelledError``, ``KeyboardInterrupt``,
      ``SystemExit``, ``GeneratorExit``) is never retried or swallowed, nor is
      anything raised while the running task is being cancelled.
    * ``retry_on_result``: ``value -> bool``: a returned value to retry (an
      HTTP 503 returned, not raised; tenacity ``retry_if_result``). When the
      attempts run out you get the last returned value, not an exception
      (DESIGN §1). Decorator and ``call`` forms, sync and ``async``.
    * ``budget`` (:class:`RetryBudget`, Finagle) or ``throttle``
      (:class:`RetryThrottle`, gRPC A6): shared limits on retries; with
      ``shared="name"`` one budget or throttle serves every process of the host.
    * ``timeout``: total seconds for all attempts. No sleep ends past it (nor
      past the :func:`~seawall.current_deadline`); an ``async`` attempt still
      running at the deadline is cancelled (:class:`~seawall.DeadlineExceededError`).
    * ``retry_after``: ``exc -> seconds | None``; default reads
      ``exc.retry_after`` (seconds or a ``timedelta``, e.g. an HTTP 429/503
      Retry-After): the delay is at least that. A hint that is no wait
      (``None``, zero, negative, NaN, not a number) is ignored: the backoff
      alone applies. A hint that cannot be waited out — ``inf``, or one ending
      past the deadline, or past about 146 years when there is none (where
      ``time.sleep`` would overflow) — gives up at once: the exception
      propagates, counted as ``deadline`` in :meth:`stats`.
    * ``before_sleep``: called with a :class:`RetryState` before each sleep
      (may be ``async`` in async code).

    When it gives up, the last exception propagates unchanged.
    """

    def __init__(
        self,
        *,
        attempts: int = 3,
        backoff: Optional[WaitSpec] = None,
        retry_on: ExceptionSpec = Exception,
        budget: Optional[_native.RetryBudget] = None,
        throttle: Optional[_native.RetryThrottle] = None,
        timeout: Optional[Seconds] = None,
        retry_after: Optional[Callable[[BaseException], Optional[Seconds]]] = None,
        before_sleep: Optional[Callable[[RetryState], Any]] = None,
        name: Optional[str] = None,
        clock: Optional[Callable[[], float]] = None,
        seed: Optional[int] = None,
        retry_on_result: Optional[Callable[[Any], object]] = None,
    ) -> None:
        for value, field in (
            (retry_on_result, "retry_on_result"),
            (retry_after, "retry_after"),
            (before_sleep, "before_sleep"),
            (clock, "clock"),
        ):
            _numbers.opt(_numbers.function, value, field)
        _numbers.opt(_numbers.text, name, "name")
        for layer, cls, field in ((budget, RetryBudget, "budget"), (throttle, RetryThrottle, "throttle")):
            if layer is not None and not isinstance(layer, cls):
                raise _numbers.config_error(field, f"must be a seawall.{cls.__name__}, got {layer!r}")
        self.retry_on_result = retry_on_result
        b, self._wait = _as_wait(backoff)
        base, multiplier, max_, factor = b._numbers()
        self._native = _native.RetryPolicy(
            attempts=_numbers.whole(attempts, "attempts"),
            base=base,
            multiplier=multiplier,
            max=max_,
            jitter=b.jitter,
            jitter_factor=factor,
            budget=budget,
            throttle=throttle,
            clock=clock,
            seed=_numbers.opt(_numbers.seed, seed, "seed"),
        )
        self.backoff = backoff if backoff is not None else b
        self.budget = budget
        self.throttle = throttle
        self.name = name
        self._retry_on = cast(Callable[[BaseException], bool], matcher(retry_on, "retry_on"))
        self._timeout_ns: Optional[int] = None
        if timeout is not None:
            timeout = _numbers.duration(timeout, "timeout")
            self._timeout_ns = _seconds.to_ns(timeout, "timeout")
        self.timeout = timeout
        self._retry_after = retry_after if retry_after is not None else _retry_after_attr
        self._before_sleep = before_sleep
        self._on_retry: Tuple[Callable[[RetryState], Any], ...] = ()
        self._on_give_up: Tuple[Callable[[RetryState], Any], ...] = ()
        if name is not None:
            _registry.register(self)

    @property
    def attempts(self) -> int:
        return self._native.max_attempts

    def stats(self) -> Dict[str, int]:
        """Decisions so far: ``allowed`` retries and give-ups by reason
        (``max_attempts``, ``deadline``, ``budget_exhausted``, ``throttled``)."""
        return self._native.tally()

    # -- the decision --------------------------------------------------------

    def _remaining_ns(self, start_ns: int) -> Optional[int]:
        left: Optional[int] = None
        if self._timeout_ns is not None:
            elapsed = max(0, self._native.now_ns() - start_ns)
            left = max(0, self._timeout_ns - elapsed)
        d = current_deadline()
        if d is not None:
            ambient = d.remaining_ns()
            left = ambient if left is None else min(left, ambient)
        return left

    def _delay_ns(self, exc: BaseException, attempt: int, previous_ns: int, start_ns: int) -> Optional[int]:
        """Nanoseconds to sleep before the next attempt, or ``None``: give up
        (the ``on_give_up`` listeners told why, unless it is the caller's own
        cancellation)."""
        if not isinstance(exc, Exception) or _task_cancelling():
            return None
        if not isinstance(exc, ResultRejected) and not self._retry_on(exc):
            self._giving_up(attempt, exc, start_ns, "not_retryable")
            return None
        if _testing is not None and _testing[1] is not None and attempt >= _testing[1]:
            self._giving_up(attempt, exc, start_ns, "max_attempts")
            return None
        retry_after_ns = _seconds.hint_to_ns(self._retry_after(exc))
        if self._wait is not None and attempt < self._native.max_attempts:  # else the core gives up
            wait_ns = _seconds.to_ns(_numbers.duration(self._wait(attempt, exc), "backoff"), "backoff")
            retry_after_ns = max(wait_ns, retry_after_ns or 0) or None
        left = self._remaining_ns(start_ns)
        delay, why = self._native.decide(
            attempt, previous_ns, _NO_DEADLINE_NS if left is None else left, retry_after_ns
        )
        if why is not None:
            self._giving_up(attempt, exc, start_ns, why)
            return None
        # A zero wait computed here is the 1 ns backoff in the core: none.
        return 0 if self._wait is not None and retry_after_ns is None else delay

    # -- hooks ---------------------------------------------------------------

    def on_retry(self, listener: Callable[[RetryState], Any]) -> Callable[[RetryState], Any]:
        """Call ``listener(state)`` before each retry's sleep (a
        :class:`RetryState`: attempt, exception, delay, elapsed); usable as a
        decorator. A listener that raises an ``Exception`` is logged (logger
        ``seawall``) and changes nothing (DESIGN §1). Returns ``listener``."""
        self._on_retry = self._on_retry + (_callable(listener),)
        return listener

    def on_give_up(self, listener: Callable[[RetryState], Any]) -> Callable[[RetryState], Any]:
        """Call ``listener(state)`` when a failed attempt is not retried:
        ``state.reason`` says why (``max_attempts``, ``deadline``,
        ``budget_exhausted``, ``throttled``, ``not_retryable``), ``delay`` is
        0. The caller's own cancellation is no give-up. Errors as for
        :meth:`on_retry`. Returns ``listener``."""
        self._on_give_up = self._on_give_up + (_callable(listener),)
        return listener

    def remove_listener(self, listener: Callable[[RetryState], Any]) -> None:
        """Stop calling ``listener`` (from :meth:`on_retry` or :meth:`on_give_up`)."""
        self._on_retry = tuple(x for x in self._on_retry if x is not listener)
        self._on_give_up = tuple(x for x in self._on_give_up if x is not listener)

    def _sleeping(self, state: RetryState) -> Any:
        """Before each sleep: the ``seawall`` logger (INFO, as tenacity's
        ``before_sleep_log``), every ``on_retry`` listener, then
        ``before_sleep``, whose result is returned (async code awaits it)."""
        log.info(
            "seawall: retry %s: attempt %d failed with %r; retrying in %.3f s",
            self.name or "(unnamed)", state.attempt, state.exception, state.delay,
        )
        _tell(self._on_retry, state)
        return None if self._before_sleep is None else self._before_sleep(state)

    def _giving_up(self, attempt: int, exc: BaseException, start_ns: int, reason: str) -> None:
        if self._on_give_up:
            state = self._state(attempt, exc, 0, start_ns)
            _tell(self._on_give_up, dataclasses.replace(state, reason=reason))

    def _state(self, attempt: int, exc: BaseException, delay_ns: int, start_ns: int) -> RetryState:
        elapsed = max(0, self._native.now_ns() - start_ns) / 1e9
        result = exc.value if isinstance(exc, ResultRejected) else None
        return RetryState(self.name, attempt, exc, delay_ns / 1e9, elapsed, result)

    def _checked(self, fn: Callable[..., R]) -> Callable[..., R]:
        """``fn`` raising :class:`ResultRejected` for a value
        ``retry_on_result`` rejects, so the attempt loop (native for the
        first attempt) treats it as a failed attempt; ``fn`` itself without
        a predicate."""
        on_result = self.retry_on_result
        if on_result is None:
            return fn

        def checked(*args: Any, **kwargs: Any) -> R:
            value = fn(*args, **kwargs)
            if on_result(value):
                raise ResultRejected(value)
            return value

        return checked

    # -- sync ----------------------------------------------------------------

    def _slow_sync(
        self,
        fn: Callable[..., R],
        args: Tuple[Any, ...],
        kwargs: Optional[Dict[str, Any]],
        exc: BaseException,
        start_ns: int,
    ) -> R:
        """The attempt loop after a first failed attempt (called by the native
        decorator, which made that attempt)."""
        kw = kwargs or {}
        attempt, previous = 1, 0
        while True:
            delay = self._delay_ns(exc, attempt, previous, start_ns)
            if delay is None:
                if isinstance(exc, ResultRejected):
                    return cast(R, exc.value)
                raise exc
            self._sleeping(self._state(attempt, exc, delay, start_ns))
            time.sleep(_sleep_seconds(delay))
            previous, attempt = delay, attempt + 1
            try:
                result = fn(*args, **kw)
            except BaseException as e:  # classified by _delay_ns
                exc = e
                continue
            self._native.success()
            return result

    def call(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """``fn(*args, **kwargs)`` with retries (a coroutine to await for an
        ``async def`` function)."""
        if is_async_callable(fn):
            return cast(R, self._run_async(fn, args, kwargs))
        guarded = _native.Guarded(self._checked(fn), retry=self._native, retry_slow=self._slow_sync)
        return cast(R, guarded(*args, **kwargs))

    # -- async ---------------------------------------------------------------

    async def _run_async(self, fn: Callable[..., Awaitable[R]], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> R:
        start = self._native.now_ns()
        self._native.request()
        on_result = self.retry_on_result
        attempt, previous = 0, 0
        while True:
            attempt += 1
            try:
                left = self._remaining_ns(start)
                if left is None:
                    result = await fn(*args, **kwargs)
                else:
                    result = await run_within(fn(*args, **kwargs), left / 1e9)
                if on_result is not None and on_result(result):
                    raise ResultRejected(result)
            except BaseException as exc:
                delay = self._delay_ns(exc, attempt, previous, start)
                if delay is None:
                    if isinstance(exc, ResultRejected):
                        return cast(R, exc.value)
                    raise
                hooked = self._sleeping(self._state(attempt, exc, delay, start))
                if inspect.isawaitable(hooked):
                    await hooked
                await asyncio.sleep(_sleep_seconds(delay))
                previous = delay
                continue
            self._native.success()
            return result

    # -- decorator -----------------------------------------------------------

    def __call__(self, fn: F) -> F:
        """Decorate a function or an ``async def`` function (a generator cannot be
        re-run from the middle, so generator functions are refused)."""
        refuse_method_descriptor(fn, "Retry")
        if is_async_callable(fn):

            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                return await self._run_async(fn, args, kwargs)

            return cast(F, functools.wraps(fn)(async_wrapper))
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            raise TypeError("Retry cannot re-run a generator; retry the code that consumes it")
        if not callable(fn):
            raise TypeError(f"Retry decorates callables, got {fn!r}")
        guarded = _native.Guarded(self._checked(fn), retry=self._native, retry_slow=self._slow_sync)
        return cast(F, functools.update_wrapper(guarded, fn))

    # -- block form ----------------------------------------------------------

    def _after(self, a: Attempt, previous: int, start: int) -> Optional[Tuple[int, BaseException]]:
        """Once attempt ``a`` of the block form ended: ``None`` when it succeeded
        (counted), else the delay (ns) before the next one and the exception;
        raises that exception when no retry is allowed."""
        exc = a._exc
        if exc is None:
            self._native.success()
            return None
        a._exc = None
        delay = self._delay_ns(exc, a.number, previous, start)
        if delay is None:
            raise exc
        return delay, exc

    def __iter__(self) -> Iterator[Attempt]:
        """``for attempt in retry: with attempt: ...`` (stops after a success)."""
        start = self._native.now_ns()
        self._native.request()
        number, previous = 0, 0
        while True:
            number += 1
            a = Attempt(number, self._retry_on)
            yield a
            step = self._after(a, previous, start)
            if step is None:
                return
            delay, exc = step
            self._sleeping(self._state(number, exc, delay, start))
            time.sleep(_sleep_seconds(delay))
            previous = delay

    async def __aiter__(self) -> AsyncIterator[Attempt]:
        """``async for attempt in retry: with attempt: ...``."""
        start = self._native.now_ns()
        self._native.request()
        number, previous = 0, 0
        while True:
            number += 1
            a = Attempt(number, self._retry_on)
            yield a
            step = self._after(a, previous, start)
            if step is None:
                return
            delay, exc = step
            hooked = self._sleeping(self._state(number, exc, delay, start))
            if inspect.isawaitable(hooked):
                await hooked
            await asyncio.sleep(_sleep_seconds(delay))
            previous = delay

    def __repr__(self) -> str:
        return f"<Retry name={self.name!r} attempts={self.attempts} backoff={self.backoff}>"
