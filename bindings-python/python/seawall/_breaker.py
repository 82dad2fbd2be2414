"""The circuit breaker (DESIGN §3): :class:`CircuitBreaker`, its windows and
states."""

from __future__ import annotations

import enum
import functools
import inspect
import logging
import weakref
from dataclasses import dataclass
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    Generator,
    Iterable,
    Mapping,
    Optional,
    Tuple,
    TypeVar,
    Union,
    cast,
)

from . import _listeners, _native, _numbers, _registry
from ._callables import guard_async_gen, is_async_callable, refuse_method_descriptor
from ._classify import ExceptionSpec, classifier
from ._seconds import NS_MAX, Seconds, to_ns
from ._stack import HeldStack

__all__ = ["CircuitBreaker", "CountWindow", "TimeWindow", "State", "Permit", "Listener", "CallListener", "EXPORT_VERSION"]

log = logging.getLogger("seawall")

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")

Permit = _native.Permit


class State(str, enum.Enum):
    """A breaker's state. Compares equal to its name: ``State.OPEN == "open"``."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"
    FORCED_OPEN = "forced_open"
    DISABLED = "disabled"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class CountWindow:
    """A count-based sliding window: the last ``size`` outcomes exactly
    (resilience4j ``COUNT_BASED``). ``1 <= size <= 1024``."""

    size: int = 100


@dataclass(frozen=True)
class TimeWindow:
    """A time-based sliding window of ``duration`` seconds in ``buckets`` buckets
    (resilience4j ``TIME_BASED``): the current partial bucket plus the
    ``buckets - 1`` before it. ``1 <= buckets <= 128``; a bucket is at least
    0.1 ms wide (``duration`` at least ``buckets * 0.0001`` seconds)."""

    duration: Seconds = 10.0
    buckets: int = 10

    @property
    def bucket_width(self) -> float:
        """Seconds per bucket."""
        return _numbers.duration(self.duration, "window.duration") / self.buckets if self.buckets > 0 else 0.0


def _window_bucket_width(duration: Any, buckets: int) -> float:
    """The bucket width (seconds) of a time window of ``duration`` seconds in
    ``buckets`` buckets, its range checked here so that the error names
    ``window.duration``, the keyword the user gave, in seconds (the native side
    knows only the width, in nanoseconds). A bad ``buckets`` is left to the
    native side, which names it."""
    seconds = _numbers.duration(duration, "window.duration")
    to_ns(seconds, "window.duration")  # negative, NaN, infinite: named as the duration
    if not 1 <= buckets <= _native.TIME_WINDOW_CAPACITY:
        return 0.0
    width = seconds / buckets
    lo_ns, hi_ns = _native.TIME_WINDOW_MIN_BUCKET_WIDTH_NS, NS_MAX // buckets
    if not lo_ns <= to_ns(width, "window.duration") <= hi_ns:
        raise _numbers.config_error(
            "window.duration",
            f"must be between {lo_ns * buckets / 1e9} and {hi_ns * buckets / 1e9} seconds for "
            f"{buckets} buckets (a bucket {lo_ns / 1e9} to {hi_ns / 1e9} seconds wide), got {seconds}",
        )
    return width


#: ``CircuitBreaker(max_open_duration=...)`` left out (DESIGN §3: 5 minutes).
_DEFAULT_MAX_OPEN_DURATION = 300.0


def _open_durations(open_duration: Any, max_open_duration: Any) -> Tuple[float, Optional[float]]:
    """``open_duration`` and ``max_open_duration`` in seconds, checked against
    each other here so that the error names the one the user set: an open
    duration above the default cap is the open duration's fault (the user may
    never have heard of the cap), any other conflict the cap's."""
    open_s = _numbers.duration(open_duration, "open_duration")
    max_s = _numbers.opt(_numbers.duration, max_open_duration, "max_open_duration")
    # Compared in nanoseconds, as the core compares them.
    if max_s is not None and to_ns(open_s, "open_duration") > to_ns(max_s, "max_open_duration"):
        if max_s == _DEFAULT_MAX_OPEN_DURATION:
            raise _numbers.config_error(
                "open_duration",
                f"must not be more than max_open_duration ({max_s} seconds by default: give a larger "
                f"max_open_duration, or None for no cap), got {open_s}",
            )
        raise _numbers.config_error(
            "max_open_duration", f"must not be less than open_duration ({open_s} seconds), got {max_s}"
        )
    return open_s, max_s


Listener = Callable[["CircuitBreaker", State, State], None]

#: ``listener(breaker, duration_seconds)`` for :meth:`CircuitBreaker.on_success`,
#: :meth:`~CircuitBreaker.on_failure` and :meth:`~CircuitBreaker.on_rejected`.
CallListener = Callable[["CircuitBreaker", float], Any]


def _events_hook(ref: "weakref.ReferenceType[CircuitBreaker]") -> Callable[[str, float], None]:
    # Weak, as the transition hook.
    def events(kind: str, duration: float) -> None:
        b = ref()
        if b is not None:
            b._dispatch_event(kind, duration)

    return events


def _settle(permit: Any, result: Any, failure_on_result: Optional[Callable[[Any], object]]) -> None:
    """Record a call that returned ``result``: a failure when
    ``failure_on_result(result)`` is true (DESIGN §1), else a success. The
    predicate's own exception is recorded and raised as the call's."""
    if failure_on_result is None:
        permit.success()
        return
    try:
        bad = failure_on_result(result)
    except BaseException as exc:
        permit.record_exception(exc)
        raise
    if bad:
        permit.failure()
    else:
        permit.success()


def _hook(ref: "weakref.ReferenceType[CircuitBreaker]") -> Callable[[str, str], None]:
    # Holds the breaker weakly: the native core keeps the hook, and the breaker
    # keeps the core.
    def hook(old: str, new: str) -> None:
        b = ref()
        if b is not None:
            b._dispatch(State(old), State(new))

    return hook


#: The version of the record :meth:`CircuitBreaker.export_state` returns and
#: ``initial_state`` takes.
EXPORT_VERSION = 1
_EXPORT_KEYS = ("version", "state", "openings", "retry_after")


def _check_exported(record: Any) -> Tuple[str, int, float]:
    """An ``initial_state`` record as ``(state, openings, open_left_seconds)``;
    anything else is a :class:`~seawall.SeawallConfigError` naming the field."""
    from ._errors import SeawallConfigError

    def bad(field: str, message: str) -> SeawallConfigError:
        return SeawallConfigError(f"invalid {field}: {message}", field)

    if not isinstance(record, Mapping):
        raise bad("initial_state", f"must be a record from breaker.export_state() {{{', '.join(_EXPORT_KEYS)}}}, got {record!r}")
    for key in record:
        if key not in _EXPORT_KEYS:
            raise bad(f"initial_state.{key}", f"unknown key {key!r}; a record has {', '.join(_EXPORT_KEYS)}")
    version = record.get("version")
    if isinstance(version, bool) or version != EXPORT_VERSION:
        raise bad("initial_state.version", f"must be {EXPORT_VERSION} (a record of this version of seawall), got {version!r}")
    state = record.get("state")
    if not isinstance(state, str) or state not in {s.value for s in State}:
        raise bad("initial_state.state", f"must be one of {', '.join(s.value for s in State)}, got {state!r}")
    state = State(state).value
    if "openings" not in record:
        raise bad("initial_state.openings", "is missing")
    openings = _numbers.whole(record["openings"], "initial_state.openings")
    if not 0 <= openings < 2**32:
        raise bad("initial_state.openings", f"must be a whole number between 0 and 4294967295, got {openings}")
    left = record.get("retry_after")
    if state == State.OPEN.value:
        if left is None:
            raise bad("initial_state.retry_after", "must be the seconds open has left (a number >= 0) when the state is open")
        open_left = _numbers.duration(left, "initial_state.retry_after")
        if not 0.0 <= open_left < float("inf"):
            raise bad("initial_state.retry_after", f"must be a finite number of seconds >= 0, got {left!r}")
    elif left is not None:
        raise bad("initial_state.retry_after", f"must be None unless the state is open, got {left!r}")
    else:
        open_left = 0.0
    return state, openings, open_left


def _listener_list(listeners: Any) -> Tuple[Listener, ...]:
    """``listeners=`` as a tuple of callables, else a config error naming it."""
    try:
        out = tuple(listeners)
    except TypeError:
        raise _numbers.config_error("listeners", f"must be an iterable of callables, got {listeners!r}") from None
    for listener in out:
        _numbers.function(listener, "listeners")
    return out


class CircuitBreaker(_native.BreakerScope):
    """A circuit breaker over an exact sliding window (DESIGN §3): closed, open,
    half-open, plus manual forced-open and disabled.

    Rules: while *closed*, it opens once the window holds at least
    ``min(minimum_calls, window size)`` calls and the failure rate reaches
    ``failure_rate_threshold`` % (or the slow-call rate reaches
    ``slow_call_rate_threshold`` %, a call being slow when it takes longer than
    ``slow_call_duration`` seconds), or after ``consecutive_failures`` failures
    in a row. While *open* it rejects with :class:`~seawall.CircuitOpenError`
    (``retry_after`` in seconds) for ``open_duration`` seconds (times
    ``open_backoff_multiplier`` per consecutive opening, capped at
    ``max_open_duration``, ± ``open_jitter_factor``). Then *half-open* admits
    ``half_open_max_calls`` probes at once: the first failed probe reopens,
    ``half_open_success_threshold`` successes close; with ``half_open_max_wait``
    seconds and no decision, the next call reopens. Outcomes of calls admitted
    before a state change never decide anything (epoch-tagged permits).

    Every duration is in seconds (``float``); thresholds are percentages
    ``0..100``; ``None`` turns an optional rule off. Invalid values raise
    :class:`~seawall.SeawallConfigError` naming the field.

    Classification: every :class:`Exception` is a failure; the caller's own
    cancellation (``asyncio.CancelledError``, ``KeyboardInterrupt``,
    ``SystemExit``, ``GeneratorExit``) is ignored. ``record_on`` / ``ignore_on``
    take exception types or predicates (``ignore_on`` wins; with ``record_on``,
    an unmatched exception counts as a success, as in resilience4j). Your
    exception always propagates unchanged. ``failure_on_result(value)`` marks
    a returned value a failure (an HTTP 503 returned, not raised; cockatiel
    ``handleWhenResult``): the breaker records a failure and you still get the
    value (decorator, ``call`` and ``async`` forms; a generator's and a
    ``with`` block's outcome is its exception only).

    ``initial_state=record`` (a record from :meth:`export_state`) starts the
    breaker in the state it was exported in (DESIGN §3.7).

    ``shared="payments"`` puts the breaker in ``/dev/shm/seawall-breaker-payments``
    so every process of the host that opens the same name (with the same
    configuration) shares one breaker.
    ``permit_slots`` (shared only; 256, 4096 (default), 32768 or 262144) is
    how many calls of all those processes may be in flight at once; the next
    raises :class:`PermitsExhaustedError`. Any other value, or one given
    without ``shared``, raises :class:`SeawallConfigError` (``field`` is
    ``"permit_slots"``); every process must give the same size
    (:class:`SharedRegionError` otherwise).

    Use it as a decorator (sync, ``async def``, generators), as ``with
    breaker:`` / ``async with breaker:``, or ``breaker.call(fn, *args)``.
    """

    def __init__(
        self,
        *,
        failure_rate_threshold: Optional[float] = 50.0,
        minimum_calls: int = 20,
        window: Union[CountWindow, TimeWindow] = TimeWindow(10.0, buckets=10),
        slow_call_duration: Optional[Seconds] = None,
        slow_call_rate_threshold: float = 100.0,
        consecutive_failures: Optional[int] = None,
        open_duration: Seconds = 30.0,
        open_backoff_multiplier: float = 1.0,
        max_open_duration: Optional[Seconds] = _DEFAULT_MAX_OPEN_DURATION,
        open_jitter_factor: float = 0.0,
        half_open_max_calls: int = 1,
        half_open_success_threshold: int = 1,
        half_open_max_wait: Optional[Seconds] = None,
        name: Optional[str] = None,
        record_on: Optional[ExceptionSpec] = None,
        ignore_on: Optional[ExceptionSpec] = None,
        listeners: Iterable[Listener] = (),
        shared: Optional[str] = None,
        clock: Optional[Callable[[], float]] = None,
        jitter_seed: Optional[int] = None,
        failure_on_result: Optional[Callable[[Any], object]] = None,
        initial_state: Optional[Mapping[str, Any]] = None,
        permit_slots: Optional[int] = None,
    ) -> None:
        initial = None if initial_state is None else _check_exported(initial_state)
        opt, text, function = _numbers.opt, _numbers.text, _numbers.function
        opt(function, failure_on_result, "failure_on_result")
        opt(function, clock, "clock")
        opt(text, name, "name")
        opt(text, shared, "shared")
        listeners = _listener_list(listeners)
        if isinstance(window, CountWindow):
            kind, size, width = "count", _numbers.whole(window.size, "window.size"), 0.0
        elif isinstance(window, TimeWindow):
            size = _numbers.whole(window.buckets, "window.buckets")
            kind, width = "time", _window_bucket_width(window.duration, size)
        else:
            raise _numbers.config_error("window", f"must be a CountWindow or a TimeWindow, got {window!r}")
        real, whole, secs = _numbers.real, _numbers.whole, _numbers.duration
        open_s, max_open_s = _open_durations(open_duration, max_open_duration)
        self._native = _native.Breaker(
            window_kind=kind,
            window_size=size,
            bucket_width=width,
            minimum_calls=whole(minimum_calls, "minimum_calls"),
            failure_rate_threshold=opt(real, failure_rate_threshold, "failure_rate_threshold"),
            slow_call_rate_threshold=real(slow_call_rate_threshold, "slow_call_rate_threshold"),
            slow_call_duration=opt(secs, slow_call_duration, "slow_call_duration"),
            consecutive_failures=opt(whole, consecutive_failures, "consecutive_failures"),
            open_duration=open_s,
            open_backoff_multiplier=real(open_backoff_multiplier, "open_backoff_multiplier"),
            max_open_duration=max_open_s,
            open_jitter_factor=real(open_jitter_factor, "open_jitter_factor"),
            half_open_max_calls=whole(half_open_max_calls, "half_open_max_calls"),
            half_open_success_threshold=whole(half_open_success_threshold, "half_open_success_threshold"),
            half_open_max_wait=opt(secs, half_open_max_wait, "half_open_max_wait"),
            name=name if name is not None else shared,
            shared=shared,
            classifier=classifier(record_on, ignore_on),
            clock=clock,
            jitter_seed=opt(_numbers.seed, jitter_seed, "jitter_seed"),
            failure_on_result=failure_on_result,
            permit_slots=opt(whole, permit_slots, "permit_slots"),
        )
        self.failure_on_result = failure_on_result
        self._bind_scope(self._native)  # `with breaker:` runs natively on it
        self.window = window
        self._region: Optional[str] = shared  # the shared region, for metrics
        self._listeners: Tuple[Listener, ...] = ()
        self._events: Dict[str, Tuple[CallListener, ...]] = {}
        self._held: HeldStack[Any] = HeldStack("breaker")
        if initial is not None:
            self._start(initial, shared)
        for listener in listeners:
            self.add_listener(listener)
        # Transitions are always looked for: the ``seawall`` logger reports
        # them (WARNING) whether or not a listener is set.
        self._native.set_hook(_hook(weakref.ref(self)))
        if self.name is not None:
            _registry.register(self)

    # -- state ---------------------------------------------------------------

    @property
    def name(self) -> Optional[str]:
        """The breaker's name (the shared region's name if none was given)."""
        return self._native.name

    @property
    def state(self) -> State:
        """The current state (``open`` until a call moves it on to ``half_open``)."""
        return State(self._native.state)

    @property
    def retry_after(self) -> Optional[float]:
        """Seconds a rejection in ``open`` would report now, else ``None``."""
        return self._native.retry_after

    @property
    def shared(self) -> bool:
        """Whether the breaker lives in a region shared by processes."""
        return self._native.shared

    def metrics(self) -> Dict[str, Any]:
        """A snapshot (reading changes nothing): ``state``, ``epoch``, ``window``
        (``calls``, ``failures``, ``slow_calls``, ``slow_failures``),
        ``failure_rate`` / ``slow_call_rate`` (% or ``None``),
        ``consecutive_failures``, ``half_open_in_flight``,
        ``half_open_successes``, ``openings``, ``retry_after`` (s),
        ``permits_outstanding`` (shared only) and lifetime ``totals``
        (``admitted``, ``rejected``, ``successes``, ``failures``, ``slow``,
        ``ignored``, ``stale``, ``transitions``)."""
        return self._native.metrics()

    def force_open(self) -> None:
        """Reject every call until :meth:`reset` (``forced_open``)."""
        self._native.force_open()

    def disable(self) -> None:
        """Admit every call, counting outcomes in totals only, until :meth:`reset`."""
        self._native.disable()

    def reset(self) -> None:
        """Back to ``closed`` with an empty window; outstanding permits become stale."""
        self._native.reset()

    def reclaim_abandoned(self) -> int:
        """Shared breakers: give back now, as ignored, the permits of processes
        that no longer exist (a worker killed mid-call; on Linux also one killed
        but not yet reaped by its parent, a zombie). Returns how many. Not
        needed: a caller refused while they hold the probes or every permit slot
        does the same by itself (DESIGN §8, self-healing)."""
        return self._native.reclaim_abandoned()

    @staticmethod
    def unlink_shared(name: str) -> None:
        """Remove the shared breaker region ``name`` (a missing one is fine)."""
        _native.Breaker.unlink_shared(name)

    def export_state(self) -> Dict[str, Any]:
        """The breaker's state as a plain, JSON-ready record (DESIGN §3.7;
        opossum ``toJSON``, cockatiel ``toJSON``): ``{"version": 1, "state",
        "openings", "retry_after"}``, ``openings`` the consecutive openings,
        ``retry_after`` the seconds ``open`` has left (``None`` in other
        states). ``CircuitBreaker(..., initial_state=record)`` starts there:
        ``open`` for exactly the time left, then half-open as usual;
        ``half_open`` as ``open`` with no time left; ``forced_open``,
        ``disabled`` as they were; ``closed`` with an empty window. Window
        counts are not carried."""
        self._native.poll()
        m = self._native.metrics()
        state = m["state"]
        left = m["retry_after"]
        return {
            "version": EXPORT_VERSION,
            "state": state,
            "openings": m["openings"],
            "retry_after": (0.0 if left is None else left) if state == State.OPEN.value else None,
        }

    def _start(self, initial: Tuple[str, int, float], shared: Optional[str]) -> None:
        """Start from a checked record; a shared breaker another process made
        must already be in its state."""
        state, openings, open_left = initial
        if shared is None or self._native.created:
            self._native.restore(state, openings, open_left)
            return
        now = self._native.state
        if now != state:
            from ._errors import SharedRegionError

            raise SharedRegionError(
                f"shared circuit breaker {shared!r} is already {now!r}: its initial_state {state!r} "
                "disagrees (the region's state is every process's; leave initial_state out, "
                "or unlink the region first)"
            )

    # -- listeners -----------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(breaker, old_state, new_state)`` on each transition
        this process notices. Transitions are noticed after every operation
        (and on :attr:`state`, :meth:`poll`), so changes made by other threads
        or processes are reported too; several transitions between two looks
        are reported as one. A listener that raises an ``Exception`` is logged
        (logger ``seawall``) and changes nothing: not the call's result, its
        outcome, nor the other listeners (DESIGN §1). ``KeyboardInterrupt`` and
        ``SystemExit`` are re-raised once the operation that noticed the
        transition is complete (its outcome recorded)."""
        if not callable(listener):
            raise TypeError(f"listener must be callable, got {listener!r}")
        self._listeners = self._listeners + (listener,)

    def on_success(self, listener: CallListener) -> CallListener:
        """Call ``listener(breaker, duration_seconds)`` after each call recorded
        as a success (pybreaker's ``success``, cockatiel's ``onSuccess``), in
        every form. Usable as a decorator; returns ``listener``. Errors as for
        :meth:`add_listener`: an ``Exception`` is logged and changes nothing."""
        return self._on("success", listener)

    def on_failure(self, listener: CallListener) -> CallListener:
        """Call ``listener(breaker, duration_seconds)`` after each call recorded
        as a failure (an exception, or a value ``failure_on_result`` rejects)."""
        return self._on("failure", listener)

    def on_rejected(self, listener: CallListener) -> CallListener:
        """Call ``listener(breaker, 0.0)`` for each call the breaker refuses
        (:class:`~seawall.CircuitOpenError`, before it is raised)."""
        return self._on("rejected", listener)

    def _on(self, kind: str, listener: CallListener) -> CallListener:
        if not callable(listener):
            raise TypeError(f"listener must be callable, got {listener!r}")
        self._events = {**self._events, kind: self._events.get(kind, ()) + (listener,)}
        self._native.set_events(_events_hook(weakref.ref(self)))
        return listener

    def _dispatch_event(self, kind: str, duration: float) -> None:
        _listeners.tell(self._events.get(kind, ()), (self, duration), f"circuit breaker {kind}")

    def remove_listener(self, listener: Any) -> None:
        """Stop calling ``listener`` (from :meth:`add_listener` or an ``on_*``)."""
        self._listeners = tuple(x for x in self._listeners if x is not listener)
        events = {k: tuple(x for x in v if x is not listener) for k, v in self._events.items()}
        self._events = {k: v for k, v in events.items() if v}
        if not self._events:
            self._native.set_events(None)

    def poll(self) -> None:
        """Look for transitions now and report them to the listeners."""
        self._native.poll()

    def _dispatch(self, old: State, new: State) -> None:
        log.warning("seawall: circuit breaker %s: %s -> %s", self.name or "(unnamed)", old.value, new.value)
        _listeners.tell(self._listeners, (self, old, new), "circuit breaker")

    # -- calls ---------------------------------------------------------------

    def acquire(self) -> "_native.Permit":
        """A permit for one call, or :class:`~seawall.CircuitOpenError`. Record
        it once (``success()``, ``failure()``, ``ignore()``,
        ``record_exception(exc)``); dropped unrecorded, it counts as ignored."""
        return self._native.acquire()

    def call(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """``fn(*args, **kwargs)`` through the breaker. For an ``async def``
        function this returns the coroutine to await."""
        if is_async_callable(fn):
            return cast(R, self._call_async(fn, args, kwargs))
        return cast(R, self._native.call(fn, args, kwargs))

    async def _call_async(self, fn: Callable[..., Awaitable[R]], args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> R:
        permit = self._native.acquire()
        try:
            result = await fn(*args, **kwargs)
        except BaseException as exc:
            permit.record_exception(exc)
            raise
        _settle(permit, result, self.failure_on_result)
        return result

    def __call__(self, fn: F) -> F:
        """Decorate a function, an ``async def`` function, a generator or an
        async generator."""
        refuse_method_descriptor(fn, "CircuitBreaker")
        native, on_result = self._native, self.failure_on_result
        if is_async_callable(fn):

            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                permit = native.acquire()
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as exc:
                    permit.record_exception(exc)
                    raise
                _settle(permit, result, on_result)
                return result

            return cast(F, functools.wraps(fn)(async_wrapper))
        if inspect.isasyncgenfunction(fn):

            async def start() -> Any:
                return native.acquire()

            def finish(permit: Any, exc: Optional[BaseException]) -> None:
                if exc is None:
                    permit.success()
                elif not permit.used:
                    permit.record_exception(exc)

            return cast(F, functools.wraps(fn)(guard_async_gen(fn, start, finish)))
        if inspect.isgeneratorfunction(fn):

            def gen_wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
                permit = native.acquire()
                try:
                    result = yield from fn(*args, **kwargs)
                except BaseException as exc:
                    permit.record_exception(exc)
                    raise
                permit.success()
                return result

            return cast(F, functools.wraps(fn)(gen_wrapper))
        if not callable(fn):
            raise TypeError(f"CircuitBreaker decorates callables, got {fn!r}")
        return cast(F, functools.update_wrapper(_native.Guarded(fn, breaker=native), fn))

    # -- with / async with ---------------------------------------------------
    #
    # ``with breaker:`` is ``_native.BreakerScope.__enter__`` / ``__exit__``: in
    # a thread with no running event loop they keep the permit on a native
    # per-thread stack; where a loop runs (tasks interleave at each ``await``,
    # even inside a sync ``with``) they call these, which keep it per task.

    def _enter_in_context(self) -> None:
        self._held.push(self._native.acquire())

    def _exit_in_context(self, exc: Optional[BaseException]) -> None:
        permit = self._held.pop()
        if exc is None:
            permit.success()
        else:
            permit.record_exception(exc)

    async def __aenter__(self) -> "CircuitBreaker":
        self._enter_in_context()
        return self

    async def __aexit__(self, et: Any, exc: Optional[BaseException], tb: Any) -> None:
        self._exit_in_context(exc)

    def __repr__(self) -> str:
        return f"<CircuitBreaker name={self.name!r} state={self._native.state} shared={self.shared}>"
