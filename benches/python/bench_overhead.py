"""Per-call overhead of seawall next to its Python peers, in one run.

    python benches/python/bench_overhead.py [--quick]

Measures a decorated no-op through each library and the bare call, takes the
best of several repeats (the least disturbed by the machine), subtracts the bare
call and prints each overhead in ns per call and as ratios:

* circuit breaker: seawall vs pybreaker and circuitbreaker;
* retry, success path: seawall vs tenacity and stamina;
* for context: seawall's bulkhead, a whole policy, a breaker shared by
  processes (/dev/shm), and ``with breaker:`` next to the decorator;
* rate limiter, an admitted check: seawall's ``RateLimiter.try_acquire`` vs
  ``limits`` (moving window, memory storage) ``hit``, both with quotas every
  check stays under. ``limits``' moving window keeps one entry per hit in the
  window and inserts each at the front of a list, so its cost grows with the
  hits in the window: it is timed in batches of 1000 hits after a reset of its
  storage (at most 1000 entries, its cheapest case), and seawall alike. The
  target is ≥ 5× cheaper.

Needs the peers installed (bindings-python/requirements-test.txt pins them);
a missing peer is reported and skipped. Not a test: nothing here asserts.
`--json PATH` also writes the numbers and the peers' versions for
benches/run's table (benches/report.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import timeit
from typing import Callable, Dict, List, Optional, Tuple


def noop(x: int = 0) -> int:
    return x


def build() -> Tuple[Dict[str, Callable[..., int]], List[str]]:
    import seawall

    fns: Dict[str, Callable[..., int]] = {"bare call": noop}
    missing: List[str] = []
    fns["seawall breaker"] = seawall.CircuitBreaker()(noop)
    scoped = seawall.CircuitBreaker()

    def with_breaker(x: int = 0) -> int:
        with scoped:
            return x

    fns["seawall breaker (with)"] = with_breaker
    shared_name = f"bench-{os.getpid()}"
    fns["seawall breaker (shared)"] = seawall.CircuitBreaker(shared=shared_name)(noop)
    fns["seawall retry"] = seawall.Retry(attempts=3)(noop)
    fns["seawall bulkhead"] = seawall.Bulkhead(100)(noop)
    fns["seawall bulkhead+breaker+retry"] = seawall.wrap(
        seawall.Bulkhead(100), seawall.CircuitBreaker(), seawall.Retry(attempts=3)
    )(noop)
    try:
        import pybreaker

        fns["pybreaker"] = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=30)(noop)
    except ImportError:
        missing.append("pybreaker")
    try:
        from circuitbreaker import circuit

        fns["circuitbreaker"] = circuit(failure_threshold=5, recovery_timeout=30)(noop)
    except ImportError:
        missing.append("circuitbreaker")
    try:
        import tenacity

        fns["tenacity retry"] = tenacity.retry(stop=tenacity.stop_after_attempt(3))(noop)
    except ImportError:
        missing.append("tenacity")
    try:
        import stamina

        fns["stamina retry"] = stamina.retry(on=Exception, attempts=3)(noop)
    except ImportError:
        missing.append("stamina")
    seawall.CircuitBreaker.unlink_shared(shared_name)
    return fns, missing


LIMITER_BATCH = 1000


def limiter_rows(repeat: int) -> Tuple[Dict[str, float], List[str]]:
    """Best ns per admitted check of each rate limiter (batches of
    :data:`LIMITER_BATCH` after a reset), interleaved round by round."""
    import seawall

    checks: Dict[str, Tuple[Callable[[], object], Callable[[], object]]] = {}
    missing: List[str] = []
    every = seawall.RateLimiter(10**9, per=1.0, burst=2**32 - 1)
    checks["seawall RateLimiter try_acquire"] = (every.try_acquire, lambda: None)
    try:
        from limits import RateLimitItemPerSecond
        from limits.storage import MemoryStorage
        from limits.strategies import MovingWindowRateLimiter

        store = MemoryStorage()
        moving = MovingWindowRateLimiter(store)
        item = RateLimitItemPerSecond(10**9)
        checks["limits moving window hit"] = (lambda: moving.hit(item, "bench"), store.reset)
    except ImportError:
        missing.append("limits")
    best = {k: float("inf") for k in checks}
    for _ in range(repeat * 20):
        for name, (check, reset) in checks.items():
            t = timeit.Timer(check, setup=reset)
            best[name] = min(best[name], t.timeit(number=LIMITER_BATCH) / LIMITER_BATCH * 1e9)
    return best, missing


def per_call_ns(fn: Callable[..., int], number: int, repeat: int) -> float:
    t = timeit.Timer(lambda: fn(1))
    return min(t.repeat(repeat=repeat, number=number)) / number * 1e9


def ratio(a: Optional[float], b: Optional[float]) -> str:
    if a is None or b is None or b <= 0:
        return "n/a"
    return f"{a / b:.3f}  (1/{b / a:.1f})" if a > 0 else "n/a"


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few thousand calls (a smoke run)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = ap.parse_args(argv)
    number, repeat = (2_000, 2) if args.quick else (200_000, 7)
    fns, missing = build()
    # Interleave the libraries round by round so drift hits them alike.
    best: Dict[str, float] = {k: float("inf") for k in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            best[name] = min(best[name], per_call_ns(fn, number, 1))
    bare = best["bare call"]
    over = {k: max(v - bare, 0.0) for k, v in best.items()}
    print(f"Python {sys.version.split()[0]}, {number} calls x {repeat} rounds, best round")
    print(f"{'':34} {'ns/call':>10} {'overhead ns':>12}")
    for name in fns:
        print(f"{name:34} {best[name]:10.1f} {over[name]:12.1f}")
    for m in missing:
        print(f"{m:34} {'not installed: skipped':>23}")
    g = over.get
    print()
    print("overhead ratios (lower is better for seawall):")
    print(f"  seawall breaker / pybreaker        {ratio(g('seawall breaker'), g('pybreaker'))}")
    print(f"  seawall breaker / circuitbreaker   {ratio(g('seawall breaker'), g('circuitbreaker'))}")
    print(f"  seawall `with breaker:` / decorator {ratio(g('seawall breaker (with)'), g('seawall breaker'))}")
    print(f"  seawall retry   / tenacity         {ratio(g('seawall retry'), g('tenacity retry'))}")
    print(f"  seawall retry   / stamina          {ratio(g('seawall retry'), g('stamina retry'))}")
    limiters, limiter_missing = limiter_rows(repeat)
    print()
    print(f"rate limiter, an admitted check (best batch of {LIMITER_BATCH} after a reset):")
    for name, v in limiters.items():
        print(f"  {name:34} {v:10.1f} ns")
    for m in limiter_missing:
        print(f"  {m:34} {'not installed: skipped':>23}")
    mine, peer = limiters.get("seawall RateLimiter try_acquire"), limiters.get("limits moving window hit")
    if mine and peer:
        verdict = "met" if peer / mine >= 5 else "MISSED"
        print(f"  limits / seawall: {peer / mine:.1f}x per check — target >= 5x: {verdict}")
    if args.json:
        write_json(args.json, number, repeat, best, over, missing + limiter_missing, limiters)
    return 0


def write_json(
    path: str,
    number: int,
    repeat: int,
    best: Dict[str, float],
    over: Dict[str, float],
    missing: List[str],
    limiters: Dict[str, float],
) -> None:
    from importlib import metadata

    versions: Dict[str, str] = {}
    for dist in ("seawall", "pybreaker", "circuitbreaker", "tenacity", "stamina", "limits"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    doc = {
        "python": sys.version.split()[0],
        "calls": number,
        "rounds": repeat,
        "ns_per_call": best,
        "overhead_ns": over,
        "missing": missing,
        "rate_limiter": {"batch": LIMITER_BATCH, "ns_per_check": limiters},
        "versions": versions,
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
