"""A Prometheus collector for seawall (``pip install seawall[prometheus]``).

    from prometheus_client import REGISTRY
    from seawall.prometheus import SeawallCollector
    REGISTRY.register(SeawallCollector())      # every live *named* seawall object

or ``SeawallCollector(breaker, bulkhead, retry)`` for exactly those. Each scrape
reads the objects' lock-free counters; nothing is counted twice or kept alive.

Metrics (label ``name``):

* ``seawall_circuit_breaker_state{state}``: 1 for the current state, 0 for the others
* ``seawall_circuit_breaker_calls_total{outcome}``: ``success``, ``failure``, ``ignored``
* ``seawall_circuit_breaker_slow_calls_total``, ``seawall_circuit_breaker_rejections_total``,
  ``seawall_circuit_breaker_transitions_total``
* ``seawall_bulkhead_active``, ``seawall_bulkhead_queued``, ``seawall_bulkhead_max_concurrent``
  (a shared bulkhead's ``active`` and ``queued`` count every process of the host;
  every counter here is this process's own)
* ``seawall_bulkhead_rejections_total{reason}``: ``full``, ``shed``, ``timeout``
* ``seawall_retries_allowed_total``, ``seawall_retries_denied_total{reason}``:
  ``max_attempts``, ``deadline``, ``budget_exhausted``, ``throttled``
"""

from __future__ import annotations

from typing import Any, Iterator, List, Optional

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from . import _registry
from ._breaker import CircuitBreaker, State
from ._bulkhead import Bulkhead
from ._retry import Retry

__all__ = ["SeawallCollector"]


def _label(obj: Any) -> str:
    name: Optional[str] = obj.name
    return name if name is not None else f"{type(obj).__name__.lower()}-{id(obj):x}"


class SeawallCollector(Collector):
    """Collects the given seawall objects, or every live named one."""

    def __init__(self, *objects: Any) -> None:
        for o in objects:
            if not isinstance(o, (CircuitBreaker, Bulkhead, Retry)):
                raise TypeError(f"SeawallCollector takes breakers, bulkheads and retries, got {o!r}")
        self._objects = objects

    def _targets(self) -> List[Any]:
        if self._objects:
            return list(self._objects)
        return [o for o in _registry.live() if o.name is not None]

    def collect(self) -> Iterator[Metric]:
        objs = self._targets()
        state = GaugeMetricFamily("seawall_circuit_breaker_state", "Circuit breaker state (1 = current).", labels=["name", "state"])
        calls = CounterMetricFamily("seawall_circuit_breaker_calls", "Calls recorded, by outcome.", labels=["name", "outcome"])
        slow = CounterMetricFamily("seawall_circuit_breaker_slow_calls", "Calls slower than slow_call_duration.", labels=["name"])
        rejected = CounterMetricFamily("seawall_circuit_breaker_rejections", "Calls refused by the breaker.", labels=["name"])
        transitions = CounterMetricFamily("seawall_circuit_breaker_transitions", "State changes.", labels=["name"])
        active = GaugeMetricFamily("seawall_bulkhead_active", "Bulkhead permits held.", labels=["name"])
        queued = GaugeMetricFamily("seawall_bulkhead_queued", "Bulkhead waiters queued.", labels=["name"])
        limit = GaugeMetricFamily("seawall_bulkhead_max_concurrent", "Bulkhead capacity.", labels=["name"])
        bh_rejected = CounterMetricFamily("seawall_bulkhead_rejections", "Calls refused by the bulkhead, by reason.", labels=["name", "reason"])
        allowed = CounterMetricFamily("seawall_retries_allowed", "Retries allowed.", labels=["name"])
        denied = CounterMetricFamily("seawall_retries_denied", "Retries refused, by reason.", labels=["name", "reason"])
        for o in objs:
            n = _label(o)
            if isinstance(o, CircuitBreaker):
                m = o.metrics()
                for st in State:
                    state.add_metric([n, st.value], 1.0 if m["state"] == st.value else 0.0)
                t = m["totals"]
                calls.add_metric([n, "success"], t["successes"])
                calls.add_metric([n, "failure"], t["failures"])
                calls.add_metric([n, "ignored"], t["ignored"])
                slow.add_metric([n], t["slow"])
                rejected.add_metric([n], t["rejected"])
                transitions.add_metric([n], t["transitions"])
            elif isinstance(o, Bulkhead):
                m = o.metrics()
                active.add_metric([n], m["active"])
                queued.add_metric([n], m["queued"])
                limit.add_metric([n], m["max_concurrent"])
                bh_rejected.add_metric([n, "full"], m["rejected_full"])
                bh_rejected.add_metric([n, "shed"], m["rejected_shed"])
                bh_rejected.add_metric([n, "timeout"], m["rejected_timeout"])
            elif isinstance(o, Retry):
                s = o.stats()
                allowed.add_metric([n], s["allowed"])
                for reason in ("max_attempts", "deadline", "budget_exhausted", "throttled"):
                    denied.add_metric([n, reason], s[reason])
        yield from (state, calls, slow, rejected, transitions, active, queued, limit, bh_rejected, allowed, denied)
