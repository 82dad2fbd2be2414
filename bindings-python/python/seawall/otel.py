"""OpenTelemetry metrics for seawall (``pip install seawall[otel]``, on ``opentelemetry-api``).

    from seawall.otel import instrument
    instrument()                                # the global MeterProvider, every live *named* object
    instrument(meter_provider, breaker, pool)   # exactly those, on a provider of your own

Each collection reads the objects' lock-free counters through observable
instruments of the meter ``seawall``; nothing is counted twice or kept alive.
OpenTelemetry's semantic conventions define no circuit-breaker, bulkhead or
retry metrics, so the names follow its naming rules: a ``seawall.`` namespace,
dotted names, counters without a ``_total`` suffix, units in UCUM annotation
braces, and an up-down counter for what is in use now (as
``http.server.active_requests`` is). Every point has the attribute
``seawall.name``:

* ``seawall.circuit_breaker.state`` (up-down counter, ``{circuit_breaker}``):
  breakers of the name in each state (attribute ``seawall.circuit_breaker.state``:
  ``closed``, ``open``, ``half_open``, ``forced_open``, ``disabled``)
* ``seawall.circuit_breaker.transitions`` (counter, ``{transition}``)
* ``seawall.circuit_breaker.calls`` (counter, ``{call}``), attribute
  ``seawall.outcome``: ``success``, ``failure``, ``ignored`` (recorded) and
  ``rejected`` (refused by the breaker)
* ``seawall.circuit_breaker.slow_calls`` (counter, ``{call}``)
* ``seawall.bulkhead.active`` (up-down counter, ``{permit}``) and
  ``seawall.bulkhead.queued`` (up-down counter, ``{waiter}``): a shared
  bulkhead's count every process of the host
* ``seawall.bulkhead.limit`` (up-down counter, ``{permit}``): ``max_concurrent``
* ``seawall.bulkhead.rejections`` (counter, ``{call}``), attribute
  ``seawall.reason``: ``full``, ``shed``, ``timeout`` (a shared bulkhead's
  count every process of the host)
* ``seawall.retry.retries`` (counter, ``{retry}``): retries allowed
* ``seawall.retry.give_ups`` (counter, ``{call}``), attribute ``seawall.reason``:
  ``max_attempts``, ``deadline``, ``budget_exhausted``, ``throttled``
* ``seawall.chaos.calls`` (counter, ``{call}``): calls through a chaos policy
* ``seawall.chaos.injections`` (counter, ``{fault}``), attribute ``seawall.fault``:
  ``latency``, ``hang``, ``failure``

Live objects of one kind that share a name are one set of points, as in
:mod:`seawall.prometheus`: counters summed, a shared region counted once.
Host-wide or per process (DESIGN §8): a shared breaker's and bulkhead's
figures live in its region, the same from every worker; the retry and chaos
points are this process's and carry ``process.pid``.
"""

from __future__ import annotations

import os

from typing import Any, Callable, Dict, Iterable, List, Optional

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation

from . import _registry
from ._breaker import CircuitBreaker, State
from ._bulkhead import Bulkhead
from ._chaos import Chaos
from ._retry import Retry

__all__ = ["instrument", "Instruments"]

_KINDS = (CircuitBreaker, Bulkhead, Retry, Chaos)
_CHAOS_FAULTS = (("latency", "latency"), ("hang", "hangs"), ("failure", "failures"))
_BULKHEAD_REASONS = ("full", "shed", "timeout")
_GIVE_UP_REASONS = ("max_attempts", "deadline", "budget_exhausted", "throttled")


class Instruments:
    """The observable instruments :func:`instrument` made; they read the objects
    at every collection until the provider shuts down."""

    def __init__(self, meter: Meter, objects: List[Any]) -> None:
        self._objects = objects
        self.instruments: List[Any] = []
        up_down = meter.create_observable_up_down_counter
        counter = meter.create_observable_counter
        for make, name, unit, description, read in [
            (up_down, "seawall.circuit_breaker.state", "{circuit_breaker}",
             "Circuit breakers of this name in each state.", self._breaker_state),
            (counter, "seawall.circuit_breaker.transitions", "{transition}",
             "State changes of the circuit breaker.", self._breaker_transitions),
            (counter, "seawall.circuit_breaker.calls", "{call}",
             "Calls by outcome: recorded (success, failure, ignored) or refused (rejected).",
             self._breaker_calls),
            (counter, "seawall.circuit_breaker.slow_calls", "{call}",
             "Calls slower than slow_call_duration.", self._breaker_slow),
            (up_down, "seawall.bulkhead.active", "{permit}",
             "Bulkhead permits held (every process, for a shared bulkhead).", self._bulkhead_active),
            (up_down, "seawall.bulkhead.queued", "{waiter}",
             "Callers waiting in the bulkhead's queue (every process, for a shared bulkhead).",
             self._bulkhead_queued),
            (up_down, "seawall.bulkhead.limit", "{permit}",
             "Bulkhead capacity (max_concurrent).", self._bulkhead_limit),
            (counter, "seawall.bulkhead.rejections", "{call}",
             "Calls refused by the bulkhead, by reason.", self._bulkhead_rejections),
            (counter, "seawall.retry.retries", "{retry}",
             "Retries allowed.", self._retries),
            (counter, "seawall.retry.give_ups", "{call}",
             "Calls that stopped retrying, by reason.", self._give_ups),
            (counter, "seawall.chaos.calls", "{call}",
             "Calls through the chaos policy.", self._chaos_calls),
            (counter, "seawall.chaos.injections", "{fault}",
             "Faults the chaos policy injected, by fault.", self._chaos_injections),
        ]:
            self.instruments.append(make(name, callbacks=[_callback(read)], unit=unit,
                                         description=description))

    def _groups(self, kind: type) -> Dict[str, List[Any]]:
        targets = self._objects or [o for o in _registry.live() if o.name is not None]
        return {n: g for (k, n), g in _registry.groups(targets, _KINDS).items() if k is kind}

    # -- circuit breakers: a shared breaker's state and totals live in its region, read once
    def _breaker_metrics(self) -> Dict[str, List[Dict[str, Any]]]:
        return {n: [o.metrics() for o in _registry.once_per_region(g)]
                for n, g in self._groups(CircuitBreaker).items()}

    def _breaker_state(self) -> Iterable[Observation]:
        for n, ms in self._breaker_metrics().items():
            for st in State:
                yield Observation(sum(m["state"] == st.value for m in ms),
                                  {"seawall.name": n, "seawall.circuit_breaker.state": st.value})

    def _breaker_transitions(self) -> Iterable[Observation]:
        for n, ms in self._breaker_metrics().items():
            yield Observation(sum(m["totals"]["transitions"] for m in ms), {"seawall.name": n})

    def _breaker_calls(self) -> Iterable[Observation]:
        for n, ms in self._breaker_metrics().items():
            for outcome, key in (("success", "successes"), ("failure", "failures"),
                                 ("ignored", "ignored"), ("rejected", "rejected")):
                yield Observation(sum(m["totals"][key] for m in ms),
                                  {"seawall.name": n, "seawall.outcome": outcome})

    def _breaker_slow(self) -> Iterable[Observation]:
        for n, ms in self._breaker_metrics().items():
            yield Observation(sum(m["totals"]["slow"] for m in ms), {"seawall.name": n})

    # -- bulkheads: a shared bulkhead's gauges and totals live in its region, read once
    def _bulkhead_gauge(self, key: str) -> Iterable[Observation]:
        for n, g in self._groups(Bulkhead).items():
            yield Observation(sum(o.metrics()[key] for o in _registry.once_per_region(g)),
                              {"seawall.name": n})

    def _bulkhead_active(self) -> Iterable[Observation]:
        return self._bulkhead_gauge("active")

    def _bulkhead_queued(self) -> Iterable[Observation]:
        return self._bulkhead_gauge("queued")

    def _bulkhead_limit(self) -> Iterable[Observation]:
        return self._bulkhead_gauge("max_concurrent")

    def _bulkhead_rejections(self) -> Iterable[Observation]:
        for n, g in self._groups(Bulkhead).items():
            ms = [o.metrics() for o in _registry.once_per_region(g)]
            for reason in _BULKHEAD_REASONS:
                yield Observation(sum(m[f"rejected_{reason}"] for m in ms),
                                  {"seawall.name": n, "seawall.reason": reason})

    # -- retries: each object's own decisions, this process's (``process.pid``)
    def _retries(self) -> Iterable[Observation]:
        for n, g in self._groups(Retry).items():
            yield Observation(sum(o.stats()["allowed"] for o in g), {"seawall.name": n, **_this_process()})

    def _give_ups(self) -> Iterable[Observation]:
        for n, g in self._groups(Retry).items():
            stats = [o.stats() for o in g]
            for reason in _GIVE_UP_REASONS:
                yield Observation(sum(s[reason] for s in stats),
                                  {"seawall.name": n, "seawall.reason": reason, **_this_process()})


    # -- chaos policies: each object's own counts, this process's (``process.pid``)
    def _chaos_calls(self) -> Iterable[Observation]:
        for n, g in self._groups(Chaos).items():
            yield Observation(sum(o.metrics()["calls"] for o in g), {"seawall.name": n, **_this_process()})

    def _chaos_injections(self) -> Iterable[Observation]:
        for n, g in self._groups(Chaos).items():
            ms = [o.metrics() for o in g]
            for fault, key in _CHAOS_FAULTS:
                yield Observation(sum(m[key] for m in ms),
                                  {"seawall.name": n, "seawall.fault": fault, **_this_process()})


def _this_process() -> Dict[str, int]:
    """The attribute of a per-process point (OpenTelemetry's ``process.pid``)."""
    return {"process.pid": os.getpid()}


def _callback(read: Callable[[], Iterable[Observation]]) -> Callable[[CallbackOptions], Iterable[Observation]]:
    # A list, not a generator: the SDK may iterate after the callback returns.
    return lambda _options: list(read())


def instrument(meter_provider: Optional[MeterProvider] = None, *objects: Any) -> Instruments:
    """Reports the given breakers, bulkheads, retries and chaos policies (none given: every live
    named one) through ``meter_provider`` (default: the global one). Raises
    ``TypeError`` for anything else."""
    for o in objects:
        if not isinstance(o, _KINDS):
            raise TypeError(f"seawall.otel.instrument takes breakers, bulkheads, retries and chaos policies, got {o!r}")
    provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
    from . import __version__

    return Instruments(provider.get_meter("seawall", __version__), list(objects))
