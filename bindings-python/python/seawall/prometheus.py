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
* ``seawall_bulkhead_rejections_total{reason}``: ``full``, ``shed``, ``timeout``
* ``seawall_retries_allowed_total{pid}``, ``seawall_retries_denied_total{pid, reason}``:
  ``max_attempts``, ``deadline``, ``budget_exhausted``, ``throttled``
* ``seawall_rate_limiter_admitted_total``, ``seawall_rate_limiter_rejected_total``:
  takes each rate limiter admitted and refused
* ``seawall_chaos_calls_total{pid}``, ``seawall_chaos_injected_total{pid, fault}``: calls
  through each chaos policy, and faults it injected: ``latency``, ``hang``,
  ``failure`` (:class:`~seawall.ChaosError` raised)

Host-wide or per process (DESIGN §8, "One set of totals"): what a shared
breaker or bulkhead counts lives in its region, so every worker of the host
exports the same figures (state, calls, rejections, ``active``, ``queued``,
rate limiter takes); scrape any one worker. The series that carry a ``pid``
label (retries, chaos) are the exporting process's own: sum them over the
workers (``sum without (pid)``).

One series per name and label set, as Prometheus requires: live objects of one
kind that share a name (two instances of a client class, two handles of one
shared region) are merged, never exported twice. Their counters are summed;
``seawall_circuit_breaker_state{state}`` counts the breakers of that name in
each state (so for one breaker it is 1 for its state, 0 for the others); the
bulkhead gauges are summed. Handles of one shared region are one object for
what lives in the region (a shared breaker's state and totals, a shared
bulkhead's ``active``, ``queued`` and ``max_concurrent``), which is counted
once. Name your objects apart to see them apart.
"""

from __future__ import annotations

import os
from typing import Any, Iterator, List

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from . import _registry
from ._breaker import CircuitBreaker, State
from ._bulkhead import Bulkhead
from ._chaos import Chaos
from ._rate_limiter import RateLimiter
from ._retry import Retry

__all__ = ["SeawallCollector"]

_KINDS = (CircuitBreaker, Bulkhead, Retry, RateLimiter, Chaos)


class SeawallCollector(Collector):
    """Collects the given seawall objects, or every live named one."""

    def __init__(self, *objects: Any) -> None:
        for o in objects:
            if not isinstance(o, _KINDS):
                raise TypeError(
                    f"SeawallCollector takes breakers, bulkheads, retries, rate limiters and chaos policies, got {o!r}"
                )
        self._objects = objects

    def _targets(self) -> List[Any]:
        if self._objects:
            return list(self._objects)
        return [o for o in _registry.live() if o.name is not None]

    def collect(self) -> Iterator[Metric]:
        state = GaugeMetricFamily("seawall_circuit_breaker_state", "Circuit breakers of this name in each state (1 = current, for one breaker).", labels=["name", "state"])
        calls = CounterMetricFamily("seawall_circuit_breaker_calls", "Calls recorded, by outcome.", labels=["name", "outcome"])
        slow = CounterMetricFamily("seawall_circuit_breaker_slow_calls", "Calls slower than slow_call_duration.", labels=["name"])
        rejected = CounterMetricFamily("seawall_circuit_breaker_rejections", "Calls refused by the breaker.", labels=["name"])
        transitions = CounterMetricFamily("seawall_circuit_breaker_transitions", "State changes.", labels=["name"])
        active = GaugeMetricFamily("seawall_bulkhead_active", "Bulkhead permits held.", labels=["name"])
        queued = GaugeMetricFamily("seawall_bulkhead_queued", "Bulkhead waiters queued.", labels=["name"])
        limit = GaugeMetricFamily("seawall_bulkhead_max_concurrent", "Bulkhead capacity.", labels=["name"])
        bh_rejected = CounterMetricFamily("seawall_bulkhead_rejections", "Calls refused by the bulkhead, by reason.", labels=["name", "reason"])
        allowed = CounterMetricFamily("seawall_retries_allowed", "Retries allowed (this process).", labels=["name", "pid"])
        denied = CounterMetricFamily("seawall_retries_denied", "Retries refused, by reason (this process).", labels=["name", "pid", "reason"])
        rl_admitted = CounterMetricFamily("seawall_rate_limiter_admitted", "Takes the rate limiter admitted.", labels=["name"])
        rl_rejected = CounterMetricFamily("seawall_rate_limiter_rejected", "Takes the rate limiter refused (over the rate).", labels=["name"])
        chaos_calls = CounterMetricFamily("seawall_chaos_calls", "Calls through the chaos policy (this process).", labels=["name", "pid"])
        chaos_injected = CounterMetricFamily("seawall_chaos_injected", "Faults the chaos policy injected, by fault (this process).", labels=["name", "pid", "fault"])
        pid = str(os.getpid())
        for (kind, n), group in _registry.groups(self._targets(), _KINDS).items():
            if kind is CircuitBreaker:
                # A shared breaker's state and totals live in its region: once per region.
                ms = [o.metrics() for o in _registry.once_per_region(group)]
                for st in State:
                    state.add_metric([n, st.value], float(sum(m["state"] == st.value for m in ms)))
                totals = [m["totals"] for m in ms]
                calls.add_metric([n, "success"], sum(t["successes"] for t in totals))
                calls.add_metric([n, "failure"], sum(t["failures"] for t in totals))
                calls.add_metric([n, "ignored"], sum(t["ignored"] for t in totals))
                slow.add_metric([n], sum(t["slow"] for t in totals))
                rejected.add_metric([n], sum(t["rejected"] for t in totals))
                transitions.add_metric([n], sum(t["transitions"] for t in totals))
            elif kind is Bulkhead:
                # A shared bulkhead's gauges and totals are the region's: once per region.
                ms = [o.metrics() for o in _registry.once_per_region(group)]
                active.add_metric([n], sum(m["active"] for m in ms))
                queued.add_metric([n], sum(m["queued"] for m in ms))
                limit.add_metric([n], sum(m["max_concurrent"] for m in ms))
                for reason in ("full", "shed", "timeout"):
                    bh_rejected.add_metric([n, reason], sum(m[f"rejected_{reason}"] for m in ms))
            elif kind is RateLimiter:
                # A shared limiter's totals are the region's: once per region.
                counts = [o.stats() for o in _registry.once_per_region(group)]
                rl_admitted.add_metric([n], sum(c["admitted"] for c in counts))
                rl_rejected.add_metric([n], sum(c["rejected"] for c in counts))
            elif kind is Chaos:
                cm = [o.metrics() for o in group]
                chaos_calls.add_metric([n, pid], sum(m["calls"] for m in cm))
                for fault, key in (("latency", "latency"), ("hang", "hangs"), ("failure", "failures")):
                    chaos_injected.add_metric([n, pid, fault], sum(m[key] for m in cm))
            else:
                stats = [o.stats() for o in group]
                allowed.add_metric([n, pid], sum(s["allowed"] for s in stats))
                for reason in ("max_attempts", "deadline", "budget_exhausted", "throttled"):
                    denied.add_metric([n, pid, reason], sum(s[reason] for s in stats))
        yield from (
            state, calls, slow, rejected, transitions, active, queued, limit, bh_rejected, allowed, denied,
            rl_admitted, rl_rejected, chaos_calls, chaos_injected,
        )
