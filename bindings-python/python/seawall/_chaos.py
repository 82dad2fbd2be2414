"""Chaos: fault injection for game days on your own service (DESIGN §11).

A :class:`Chaos` policy sits next to the call (innermost in :func:`~seawall.wrap`),
so a timeout, a retry and a breaker see an injected fault exactly as they would
see the dependency's own. Per call, when the rules are ``enabled``: with
probability ``probability`` the rule applies; then ``latency`` seconds are
waited, then ``hang`` waits for good, then with probability ``failure_rate`` the
call raises :class:`ChaosError` instead of running. Draws come from
``random.Random(seed)`` (OS entropy when no seed is given).

Waits end early, and never outlast the caller's budget:

* asyncio: cancelling the task ends an injected latency or hang at once
  (``asyncio.CancelledError``, as for any await);
* a :func:`~seawall.current_deadline` (a policy's timeout, a ``with Deadline``,
  the middleware's per-request deadline) bounds the wait: when it ends first,
  the wait stops there and :class:`~seawall.DeadlineExceededError` is raised,
  as a dependency client that honours the deadline would. Sync code is
  waited for with ``time.sleep``; a sync ``hang`` with no deadline waits until
  the thread is interrupted (a signal on the main thread), so give hanging
  sync calls a deadline.

One policy per dependency name per process (``seawall.chaos("inventory")``,
``seawall.chaos.for_dependency("inventory")``). Rules come from code
(``seawall.chaos("inventory", enabled=True, ...)``, then :meth:`Chaos.set` /
:meth:`Chaos.update` at run time) or from a JSON file: :meth:`ChaosRegistry.load`
sets the rules of the policies it names and re-reads the file when it changes.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import os
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Set, Tuple, TypeVar, Union, cast

from . import _numbers, _registry, _seconds
from ._callables import is_async_callable, refuse_method_descriptor
from ._deadline import current_deadline
from ._errors import DeadlineExceededError, SeawallConfigError, SeawallError

__all__ = ["Chaos", "ChaosError", "ChaosFile", "ChaosRegistry", "ChaosRules", "chaos"]

log = logging.getLogger("seawall")

F = TypeVar("F", bound=Callable[..., Any])

_FIELDS = ("enabled", "probability", "latency", "failure_rate", "hang")
# The seed documents' (and Node's) spellings, accepted in rule files so one file
# can drive services in both languages: milliseconds and camelCase.
_ALIASES = {"latency_ms": "latency", "latencyMs": "latency", "failureRate": "failure_rate"}


class ChaosError(SeawallError):
    """A failure injected by a :class:`Chaos` policy (``failure_rate``), raised
    instead of running the call. ``name`` is the policy's dependency name. It is
    an ``Exception`` like a dependency's own error, so breakers count it as a
    failure, retries retry it and fallbacks catch it; catch this class to tell
    an injected fault from a real one."""

    code = "ECHAOS"

    def __init__(self, message: str, name: Optional[str] = None) -> None:
        super().__init__(message)
        self.name = name

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (str(self), self.name))


def _flag(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise SeawallConfigError(f"invalid {field}: must be true or false, got {value!r}", field)
    return value


def _fraction(value: Any, field: str) -> float:
    f = _numbers.real(value, field)
    if not 0.0 <= f <= 1.0:  # NaN fails too
        raise SeawallConfigError(f"invalid {field}: must be a number from 0 to 1, got {value!r}", field)
    return f


def _latency(value: Any, field: str) -> float:
    seconds = _numbers.duration(value, field)
    _seconds.to_ns(seconds, field)
    return seconds


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise SeawallConfigError(f"invalid name: a chaos policy needs a dependency name, got {name!r}", "name")
    return name


@dataclass(frozen=True)
class ChaosRules:
    """What a :class:`Chaos` policy injects. ``enabled``: nothing happens unless
    true. ``probability`` (0..1, default 1): the share of calls the rule applies
    to. ``latency`` (seconds, float or ``timedelta``, default 0): waited before
    the call. ``failure_rate`` (0..1, default 0): the share of applied calls that
    raise :class:`ChaosError` instead of running. ``hang`` (default false): an
    applied call never settles until cancelled or past its deadline. A bad value
    is a :class:`~seawall.SeawallConfigError` naming the field (``True`` is not
    1, as everywhere in seawall)."""

    enabled: bool = False
    probability: float = 1.0
    latency: float = 0.0
    failure_rate: float = 0.0
    hang: bool = False

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "enabled", _flag(self.enabled, "enabled"))
        set_(self, "probability", _fraction(self.probability, "probability"))
        set_(self, "latency", _latency(self.latency, "latency"))
        set_(self, "failure_rate", _fraction(self.failure_rate, "failure_rate"))
        set_(self, "hang", _flag(self.hang, "hang"))

    @classmethod
    def from_mapping(cls, fields: Mapping[str, Any], where: str = "") -> "ChaosRules":
        """Rules from a mapping (a JSON object): the field names above, plus the
        seed documents' ``latencyMs`` / ``latency_ms`` (milliseconds) and
        ``failureRate``. An unknown key, a key given twice, or a bad value is a
        :class:`~seawall.SeawallConfigError` whose ``field`` is
        ``where + "." + key`` (``where`` names the dependency)."""
        if not isinstance(fields, Mapping):
            raise SeawallConfigError(f"invalid {where or 'rules'}: must be an object of rules, got {fields!r}", where or "rules")
        prefix = f"{where}." if where else ""
        out: Dict[str, Any] = {}
        for key, value in fields.items():
            name = _ALIASES.get(key, key)
            if name not in _FIELDS:
                raise SeawallConfigError(
                    f"invalid {prefix}{key}: unknown chaos rule (use {', '.join(_FIELDS)})", f"{prefix}{key}"
                )
            if name in out:
                raise SeawallConfigError(f"invalid {prefix}{key}: {name} is given twice", f"{prefix}{key}")
            if key in ("latency_ms", "latencyMs"):
                ms = _latency(value, f"{prefix}{key}")
                value = ms / 1000.0
            out[name] = value
        try:
            return cls(**out)
        except SeawallConfigError as e:
            field = f"{prefix}{e.field}"
            raise SeawallConfigError(str(e).replace(f"invalid {e.field}", f"invalid {field}", 1), field) from None


class Chaos:
    """A fault-injection policy named for the dependency it stands in front of.
    ``seawall.chaos(name, rules, **fields)`` and
    ``seawall.chaos.for_dependency(name)`` give the process-wide one of
    ``name`` (one per name, whose rules a loaded file sets too); ``Chaos(...)``
    builds one outside the registry. Decorates sync and ``async def``
    functions; composes innermost in :func:`~seawall.wrap`. Thread-safe."""

    def __init__(
        self,
        name: str,
        rules: Union[ChaosRules, Mapping[str, Any], None] = None,
        *,
        seed: Optional[int] = None,
        **fields: Any,
    ) -> None:
        self.name = _name(name)
        self._lock = threading.Lock()
        self._rng = random.Random()
        self.reseed(seed)
        self._rules = ChaosRules()
        self._counts = {"calls": 0, "applied": 0, "latency": 0, "failures": 0, "hangs": 0}
        self.set(rules, **fields)
        _registry.register(self)

    # -- rules ---------------------------------------------------------------

    @property
    def rules(self) -> ChaosRules:
        return self._rules

    @property
    def enabled(self) -> bool:
        return self._rules.enabled

    @staticmethod
    def _checked(rules: Union[ChaosRules, Mapping[str, Any], None] = None, **fields: Any) -> ChaosRules:
        """The rules :meth:`set` would put in force, checked, changing nothing."""
        if rules is None:
            base: Dict[str, Any] = {}
        elif isinstance(rules, ChaosRules):
            base = {f: getattr(rules, f) for f in _FIELDS}
        else:
            base = {f: getattr(ChaosRules.from_mapping(rules), f) for f in _FIELDS}
        return ChaosRules.from_mapping({**base, **fields})

    def set(self, rules: Union[ChaosRules, Mapping[str, Any], None] = None, **fields: Any) -> ChaosRules:
        """Replace the rules (fields not given take their defaults: ``set()``
        turns chaos off). Calls already waiting keep the rules they started with."""
        new = self._checked(rules, **fields)
        self._rules = new  # one reference: a call reads the old or the new rules, never a mix
        return new

    def update(self, **fields: Any) -> ChaosRules:
        """Change some fields, keeping the others: ``update(latency=2.0)``."""
        current = {f: getattr(self._rules, f) for f in _FIELDS}
        return self.set({**current, **fields})

    def disable(self) -> None:
        """Turn chaos off (the other fields are kept for a later ``update(enabled=True)``)."""
        self.update(enabled=False)

    def reseed(self, seed: Optional[int] = None) -> None:
        """Restart the draws from ``seed`` (a whole number ``0 <= seed < 2**64``;
        ``None``: OS entropy). One seed gives one sequence of decisions."""
        if seed is not None:
            seed = _numbers.seed(seed, "seed")
        with self._lock:
            self._rng.seed(seed)

    def metrics(self) -> Dict[str, Any]:
        """``name``, ``enabled``, and this policy's lifetime counts: ``calls``
        (through the policy), ``applied`` (calls the rule applied to),
        ``latency`` (latencies injected), ``hangs`` and ``failures``
        (:class:`ChaosError` raised)."""
        with self._lock:
            counts = dict(self._counts)
        return {"name": self.name, "enabled": self._rules.enabled, **counts}

    # -- one call ------------------------------------------------------------

    def _plan(self) -> Optional[Tuple[float, bool, bool]]:
        """This call's faults ``(latency, hang, fail)``, or ``None``. Both draws
        are made together, under the lock, so one seed gives one sequence
        whatever the threads do in between."""
        rules = self._rules
        with self._lock:
            self._counts["calls"] += 1
            if not rules.enabled or not self._rng.random() < rules.probability:
                return None
            fail = self._rng.random() < rules.failure_rate
            self._counts["applied"] += 1
        return rules.latency, rules.hang, fail

    def _count(self, what: str) -> None:
        with self._lock:
            self._counts[what] += 1

    def _failure(self) -> ChaosError:
        self._count("failures")
        return ChaosError(f"chaos: failure injected in front of {self.name!r}", self.name)

    def _bound(self, seconds: Optional[float]) -> Tuple[Optional[float], bool]:
        """How long to wait (``None``: for ever) and whether the deadline ends it."""
        d = current_deadline()
        if d is None:
            return seconds, False
        left = d.remaining()
        if seconds is None or seconds >= left:
            return left, True
        return seconds, False

    def _deadline_error(self, what: str) -> DeadlineExceededError:
        return DeadlineExceededError(f"chaos: the {what} injected in front of {self.name!r} outlasted the deadline")

    def _wait_sync(self, seconds: Optional[float], what: str) -> None:
        wait, cut = self._bound(seconds)
        if wait is None:
            threading.Event().wait()  # a sync hang: until a signal interrupts the thread
        elif wait > 0:
            time.sleep(wait)
        if cut:
            raise self._deadline_error(what)

    async def _wait_async(self, seconds: Optional[float], what: str) -> None:
        wait, cut = self._bound(seconds)
        if wait is None:
            await asyncio.get_running_loop().create_future()  # settles only by cancellation
        else:
            await asyncio.sleep(wait)
        if cut:
            raise self._deadline_error(what)

    def inject(self) -> None:
        """Apply the rules to one sync call about to be made: wait, hang or
        raise :class:`ChaosError` as they say; return to make the call."""
        plan = self._plan()
        if plan is None:
            return
        latency, hang, fail = plan
        if latency > 0:
            self._count("latency")
            self._wait_sync(latency, "latency")
        if hang:
            self._count("hangs")
            self._wait_sync(None, "hang")
        if fail:
            raise self._failure()

    async def inject_async(self) -> None:
        """:meth:`inject` for asyncio: the waits are cancellable at once."""
        plan = self._plan()
        if plan is None:
            return
        latency, hang, fail = plan
        if latency > 0:
            self._count("latency")
            await self._wait_async(latency, "latency")
        if hang:
            self._count("hangs")
            await self._wait_async(None, "hang")
        if fail:
            raise self._failure()

    # -- decorator -----------------------------------------------------------

    def __call__(self, fn: F) -> F:
        """``@seawall.chaos.for_dependency("inventory")`` on a sync or ``async
        def`` function: each call goes through :meth:`inject` first."""
        refuse_method_descriptor(fn, "Chaos")
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            raise TypeError("chaos cannot decorate a generator: decorate the function that makes the call")
        if is_async_callable(fn):
            afn = fn

            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                await self.inject_async()
                return await afn(*args, **kwargs)

            return cast(F, functools.wraps(fn)(async_wrapper))
        if not callable(fn):
            raise TypeError(f"Chaos decorates callables, got {fn!r}")

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.inject()
            return fn(*args, **kwargs)

        return cast(F, functools.wraps(fn)(wrapper))

    def __repr__(self) -> str:
        return f"<Chaos name={self.name!r} {self._rules}>"


Listener = Callable[[str, BaseException], None]


def _signature(path: str) -> Optional[Tuple[int, int, int]]:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def parse_rules(text: str) -> Dict[str, ChaosRules]:
    """A rules file: one JSON object of dependency names to rule objects."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise SeawallConfigError(f"invalid rules file: not JSON ({e})", "rules") from None
    if not isinstance(data, dict):
        raise SeawallConfigError("invalid rules file: must be an object of dependency names to rules", "rules")
    if "" in data:  # JSON allows it; a dependency name does not (checked before any rule is set)
        raise SeawallConfigError('invalid rules file: "" is no dependency name', "rules")
    return {name: ChaosRules.from_mapping(r, where=name) for name, r in data.items()}


class ChaosFile:
    """A rules file loaded by :meth:`ChaosRegistry.load`. Each read sets the
    rules of every dependency it names (``for_dependency(name)``) and turns off
    the ones an earlier read named and this one no longer does; a file missing
    at the first read holds no rules (until it appears). A bad file (deleted
    since, unreadable, not JSON, an unknown field, a bad value) changes
    nothing: the previous rules stay (DESIGN §11), and the reason
    (``FileNotFoundError`` for a deleted file, else the ``OSError`` or
    :class:`~seawall.SeawallConfigError`) is :attr:`error`, passed to
    ``on_error(path, error)`` and logged on the ``seawall`` logger at WARNING.
    End a game day by writing the rules off, or with
    :meth:`ChaosRegistry.reset`.

    With ``poll_interval`` (seconds; ``None``: never) a daemon thread looks at
    the file's modification time, size and inode every ``poll_interval``, and
    re-reads it once it has seen the same change twice in a row (so a file
    caught half-written is read when the writer is done). :meth:`reload` reads
    it now."""

    def __init__(
        self,
        registry: "ChaosRegistry",
        path: "Union[str, os.PathLike[str]]",
        *,
        poll_interval: Optional[float] = 1.0,
        on_error: Optional[Listener] = None,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise SeawallConfigError(f"invalid path: must be a file path, got {path!r}", "path")
        if on_error is not None and not callable(on_error):
            raise SeawallConfigError(f"invalid on_error: must be callable, got {on_error!r}", "on_error")
        self.path = os.fspath(path)
        self.error: Optional[BaseException] = None
        self._registry = registry
        self._on_error = on_error
        self._names: Set[str] = set()
        self._lock = threading.Lock()
        self._seen: Optional[Tuple[int, int, int]] = None
        self._pending: Optional[Tuple[int, int, int]] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        if poll_interval is not None:
            poll_interval = _latency(poll_interval, "poll_interval")
            if poll_interval <= 0:
                raise SeawallConfigError("invalid poll_interval: must be > 0 seconds (None: no polling)", "poll_interval")
        self.poll_interval = poll_interval
        self._read(first=True)
        if poll_interval is not None:
            self._thread = threading.Thread(target=self._watch, name=f"seawall-chaos-{self.path}", daemon=True)
            self._thread.start()

    def reload(self) -> bool:
        """Read the file now. ``True`` when its rules are in force, ``False``
        when it was bad (the previous rules stay; see :attr:`error`)."""
        return self._read(first=False)

    def _read(self, first: bool) -> bool:
        with self._lock:
            sig = _signature(self.path)
            try:
                if sig is None and first:
                    rules: Dict[str, ChaosRules] = {}
                else:  # a file deleted since: FileNotFoundError, reported as any bad file
                    with open(self.path, encoding="utf-8") as f:
                        rules = parse_rules(f.read())
            except (OSError, UnicodeDecodeError, SeawallConfigError) as e:
                if first:  # no previous rules to keep: the caller hears it at once
                    raise
                self._seen = sig
                self._report(e)
                return False
            self._seen = sig
            self.error = None
            for name in self._names - set(rules):
                self._registry.for_dependency(name).set()
            for name, r in rules.items():
                self._registry.for_dependency(name).set(r)
            self._names = set(rules)
            return True

    def _report(self, e: BaseException) -> None:
        self.error = e
        log.warning("seawall chaos: %s kept its previous rules: %s", self.path, e)
        if self._on_error is not None:
            try:
                self._on_error(self.path, e)
            except Exception:
                log.exception("seawall chaos: the on_error listener of %s raised", self.path)

    def _poll(self) -> None:
        sig = _signature(self.path)
        if sig == self._seen:
            self._pending = None
        elif sig == self._pending:
            self._pending = None
            self.reload()
        else:
            self._pending = sig

    def _watch(self) -> None:
        assert self.poll_interval is not None
        while not self._stop.wait(self.poll_interval):
            try:
                self._poll()
            except Exception:  # never let the watcher die: the next poll tries again
                log.exception("seawall chaos: watching %s failed", self.path)

    def close(self) -> None:
        """Stop watching (the rules in force stay)."""
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join()

    def __enter__(self) -> "ChaosFile":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ChaosFile {self.path!r} names={sorted(self._names)} error={self.error!r}>"


class ChaosRegistry:
    """``seawall.chaos``: the process-wide chaos policies, one per dependency
    name (as Node's ``chaos(name)``). ``seawall.chaos("inventory", ...)``
    (the same arguments as :class:`Chaos`), :meth:`for_dependency` and the
    files of :meth:`load` all reach the same policy. Build a :class:`Chaos`
    yourself for one outside the registry."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_name: Dict[str, Chaos] = {}

    def __call__(
        self,
        name: str,
        rules: Union[ChaosRules, Mapping[str, Any], None] = None,
        *,
        seed: Optional[int] = None,
        **fields: Any,
    ) -> Chaos:
        """The policy of ``name``, made at the first call with ``rules`` /
        ``fields`` (off without them) and ``seed``. A later call returns the
        same policy; rules or fields given replace its rules (as
        :meth:`Chaos.set`) and a seed given restarts its draws (as
        :meth:`Chaos.reseed`); given neither, it changes nothing. A bad value
        is a :class:`~seawall.SeawallConfigError` naming the field, and then
        nothing changes."""
        with self._lock:
            c = self._by_name.get(_name(name))
            if c is None:
                c = Chaos(name, rules, seed=seed, **fields)
                self._by_name[name] = c
                return c
        new = None if rules is None and not fields else c._checked(rules, **fields)
        if seed is not None:
            c.reseed(seed)
        if new is not None:
            c.set(new)
        return c

    def for_dependency(self, name: str) -> Chaos:
        """The process-wide policy of ``name`` (made, off, at the first ask):
        the same object every time (``seawall.chaos(name)`` too), whose rules
        :meth:`load` and your own :meth:`Chaos.set` change for every caller at
        once."""
        return self(name)

    def get(self, name: str) -> Optional[Chaos]:
        """The policy of ``name``, or ``None`` when none was made."""
        with self._lock:
            return self._by_name.get(name)

    def dependencies(self) -> Dict[str, ChaosRules]:
        """The rules of every process-wide policy, by name."""
        with self._lock:
            return {n: c.rules for n, c in self._by_name.items()}

    def load(
        self,
        path: "Union[str, os.PathLike[str]]",
        *,
        poll_interval: Optional[float] = 1.0,
        on_error: Optional[Listener] = None,
    ) -> ChaosFile:
        """Load a JSON rules file into the process-wide policies and watch it
        (see :class:`ChaosFile`), e.g.
        ``{"inventory": {"enabled": true, "latency": 0.1, "failure_rate": 0.5}}``.
        A bad file at this first read raises its
        :class:`~seawall.SeawallConfigError` (or ``OSError``); a missing one
        holds no rules until it appears. Deleting the file later keeps the
        rules it set (reported as a bad file)."""
        return ChaosFile(self, path, poll_interval=poll_interval, on_error=on_error)

    def reset(self) -> None:
        """Turn every process-wide policy off (tests, the end of a game day)."""
        with self._lock:
            policies = list(self._by_name.values())
        for c in policies:
            c.set()


#: ``seawall.chaos``: see :class:`ChaosRegistry`.
chaos = ChaosRegistry()
