"""Runs the conformance scenarios (``conformance/cases/FORMAT.md``) through the
Python package's public API, with a fake clock.

``python conformance_runner.py [DIR...]`` prints ``PASS``/``FAIL``/``SKIP`` per
scenario and ``N passed, N failed, N skipped``; exits 1 on any failure. The
directories are the arguments, else ``SEAWALL_CASES`` (colon-separated), else
the repository's ``conformance/cases`` and ``../shared/cases`` when present,
then ``conformance/cases-rate-limiter`` and ``../shared/cases-rate-limiter``.

Every expected value comes from the scenario file; times and durations go in
as the package's ``float`` seconds and come back compared in whole nanoseconds,
so the Python edge's conversions are checked too.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import seawall
from seawall import _native

REPO = Path(__file__).resolve().parents[2]


class Fail(Exception):
    pass


class Malformed(Exception):
    pass


def scenario_dirs(args: List[str]) -> List[Path]:
    if args:
        return [Path(a) for a in args]
    env = os.environ.get("SEAWALL_CASES")
    if env:
        dirs = [Path(d) for d in env.split(":") if d]
        if dirs:
            return dirs
    dirs = []
    for name in ("cases", "cases-rate-limiter"):
        dirs.append(REPO / "conformance" / name)
        shared = REPO.parent / "shared" / name
        if shared.is_dir():
            dirs.append(shared)
    return dirs


def scenario_files(dirs: List[Path]) -> List[Path]:
    files: List[Path] = []
    for d in dirs:
        files.extend(sorted(p for p in d.iterdir() if p.suffix == ".json"))
    return files


class FakeClock:
    """Seconds, set by the steps' ``at_ms``."""

    def __init__(self) -> None:
        self.ms = 0.0

    def advance(self, step: Dict[str, Any]) -> None:
        at = step.get("at_ms")
        if at is not None:
            if at < self.ms:
                raise Malformed("`at_ms` goes backwards")
            self.ms = float(at)

    def __call__(self) -> float:
        return self.ms / 1000.0


def ns(ms: float) -> int:
    return int(round(ms * 1e6))


def s_to_ns(s: Optional[float]) -> Optional[int]:
    return None if s is None else int(round(s * 1e9))


def expect(i: int, want: Any, got: Any) -> None:
    if want != got:
        raise Fail(f"step {i} (0-based): expected {want!r}, got {got!r}")


PRIMITIVES = (
    "breaker", "backoff", "retry_budget", "retry_throttle", "semaphore", "deadline", "health", "rate_limiter",
)


# -- breaker -----------------------------------------------------------------


def breaker_from(cfg: Dict[str, Any], clock: FakeClock) -> seawall.CircuitBreaker:
    kw: Dict[str, Any] = {}
    w = cfg.get("window")
    if w is not None:
        if w["kind"] == "count":
            kw["window"] = seawall.CountWindow(w["size"])
        elif w["kind"] == "time":
            b, width = w["buckets"], w["bucket_ms"]
            kw["window"] = seawall.TimeWindow(b * width / 1000.0, buckets=b)
        else:
            raise Malformed(f"unknown window kind {w['kind']!r}")
    secs = lambda v: None if v is None else v / 1000.0  # noqa: E731
    plain = {
        "minimum_calls": None,
        "failure_rate_threshold": None,
        "slow_call_rate_threshold": None,
        "consecutive_failures": None,
        "open_backoff_multiplier": None,
        "open_jitter_factor": None,
        "half_open_max_calls": None,
        "half_open_success_threshold": None,
    }
    timed = {
        "slow_call_duration_ms": "slow_call_duration",
        "open_duration_ms": "open_duration",
        "max_open_duration_ms": "max_open_duration",
        "half_open_max_wait_ms": "half_open_max_wait",
    }
    for key, value in cfg.items():
        if key == "window":
            continue
        if key in plain:
            kw[key] = value
        elif key in timed:
            kw[timed[key]] = secs(value)
        else:
            raise Malformed(f"unknown breaker key {key!r}")
    return seawall.CircuitBreaker(clock=clock, jitter_seed=0x5EA3A11, **kw)


def run_breaker(sc: Dict[str, Any]) -> None:
    clock = FakeClock()
    b = breaker_from(sc["breaker"], clock)
    held: Dict[str, Any] = {}

    def acquire() -> Any:
        try:
            return b.acquire()
        except seawall.CircuitOpenError:
            return None

    for i, step in enumerate(sc["steps"]):
        clock.advance(step)
        duration = step.get("duration_ms", 0) / 1000.0
        if "call" in step or "acquire" in step:
            p = acquire()
            got = "admitted" if p is not None else "rejected"
            if "expect" in step:
                expect(i, step["expect"], got)
            if p is not None:
                if "call" in step:
                    p.record(step["call"], duration)
                else:
                    held[step["acquire"]] = p
        elif "record" in step:
            held.pop(step["record"]).record(step["outcome"], duration)
        elif "force_open" in step:
            b.force_open()
        elif "disable" in step:
            b.disable()
        elif "reset" in step:
            b.reset()
        elif "expect_state" in step:
            expect(i, step["expect_state"], b.state.value)
        elif "expect_retry_after_ms" in step:
            want = step["expect_retry_after_ms"]
            expect(i, None if want is None else ns(want), s_to_ns(b.retry_after))
        elif "at_ms" not in step:
            raise Malformed(f"step {i} does nothing")


# -- backoff -----------------------------------------------------------------


def run_backoff(sc: Dict[str, Any]) -> None:
    cfg = sc["backoff"]
    kw: Dict[str, Any] = {}
    for key, value in cfg.items():
        if key in ("base_ms", "max_ms"):
            kw[key[:-3]] = value / 1000.0
        elif key in ("multiplier", "jitter", "jitter_factor"):
            kw[key] = value
        else:
            raise Malformed(f"unknown backoff key {key!r}")
    backoff = seawall.Backoff(**kw)
    native: _native.Backoff = getattr(backoff, "_native")
    sequential = backoff.jitter == "decorrelated"

    def draw(attempt: int, seed: int) -> int:
        randoms = _native.splitmix64(seed, attempt if sequential else 1)
        if not sequential:
            return native.delay_ns(attempt, 0, randoms[0])
        previous = 0
        for n in range(1, attempt + 1):
            previous = native.delay_ns(n, previous, randoms[n - 1])
        return previous

    seed = 0x5EA3A11
    for i, step in enumerate(sc["steps"]):
        attempt = step["attempt"]
        if "expect_delay_ms" in step:
            expect(i, ns(step["expect_delay_ms"]), draw(attempt, seed))
        elif "expect_range_ms" in step:
            lo, hi = step["expect_range_ms"]
            draws = step.get("draws", 1)
            seen = []
            for _ in range(draws):
                seed += 1
                got = draw(attempt, seed)
                if not ns(lo) <= got <= ns(hi):
                    raise Fail(f"step {i} (0-based): expected a delay in [{lo}, {hi}] ms, got {got / 1e6} ms")
                seen.append(got)
            if lo < hi and draws > 1 and len(set(seen)) == 1:
                raise Fail(f"step {i} (0-based): expected draws that differ, got {draws} draws all {seen[0] / 1e6} ms")
        else:
            raise Malformed(f"step {i} needs expect_delay_ms or expect_range_ms")


# -- retry budget / throttle -------------------------------------------------


def run_retry_budget(sc: Dict[str, Any]) -> None:
    cfg = sc["retry_budget"]
    clock = FakeClock()
    kw: Dict[str, Any] = {}
    for key, value in cfg.items():
        if key == "ttl_ms":
            kw["ttl"] = value / 1000.0
        elif key in ("min_retries_per_sec", "percent_can_retry"):
            kw[key] = value
        else:
            raise Malformed(f"unknown retry_budget key {key!r}")
    budget = seawall.RetryBudget(clock=clock, **kw)
    for i, step in enumerate(sc["steps"]):
        clock.advance(step)
        if "request" in step:
            for _ in range(step["request"]):
                budget.deposit()
        elif "retry" in step:
            allowed = sum(1 for _ in range(step["retry"]) if budget.try_withdraw())
            if "expect_allowed" in step:
                expect(i, step["expect_allowed"], allowed)
        elif "at_ms" not in step:
            raise Malformed(f"step {i} does nothing")


def run_retry_throttle(sc: Dict[str, Any]) -> None:
    cfg = sc["retry_throttle"]
    throttle = seawall.RetryThrottle(**cfg)
    for i, step in enumerate(sc["steps"]):
        if "success" in step:
            for _ in range(step["success"]):
                throttle.record_success()
        elif "failure" in step:
            last = None
            for _ in range(step["failure"]):
                last = throttle.record_failure()
            if "expect_retry" in step and last is not None:
                expect(i, step["expect_retry"], last)
        elif "at_ms" not in step:
            raise Malformed(f"step {i} does nothing")


# -- semaphore ---------------------------------------------------------------


def run_semaphore(sc: Dict[str, Any]) -> None:
    cfg = dict(sc["semaphore"])
    shares = cfg.pop("priority_shares", None)
    bulkhead = seawall.Bulkhead(cfg.pop("max_concurrent", 10), cfg.pop("max_queue", 0), shares=shares)
    if cfg:
        raise Malformed(f"unknown semaphore keys {sorted(cfg)}")
    holders: Dict[str, Any] = {}
    waiting: List[Tuple[str, Any]] = []
    granted_log: List[str] = []
    for i, step in enumerate(sc["steps"]):
        if "acquire" in step:
            name, prio = step["acquire"], step.get("priority", "normal")
            try:
                if step.get("wait", False):
                    got_obj = bulkhead.enqueue(prio)
                else:
                    got_obj = bulkhead.try_acquire(prio)
            except seawall.BulkheadFullError:
                got = "rejected"
            else:
                if isinstance(got_obj, seawall.BulkheadTicket):
                    waiting.append((name, got_obj))
                    got = "queued"
                else:
                    holders[name] = got_obj
                    got = "admitted"
            if "expect" in step:
                expect(i, step["expect"], got)
        elif "cancel" in step:
            at = [n for n, _ in waiting].index(step["cancel"])
            waiting.pop(at)[1].cancel()
        elif "release" in step:
            holders.pop(step["release"]).release()
        elif "expect_granted" in step:
            expect(i, step["expect_granted"], granted_log)
            granted_log = []
        elif isinstance(step.get("expect"), dict):
            want = (step["expect"].get("active", 0), step["expect"].get("queued", 0))
            expect(i, want, (bulkhead.active, bulkhead.queued))
        elif "at_ms" not in step:
            raise Malformed(f"step {i} does nothing")
        k = 0
        while k < len(waiting):
            name, ticket = waiting[k]
            if ticket.granted():
                waiting.pop(k)
                granted_log.append(name)
                holders[name] = ticket.take()
            else:
                k += 1


# -- deadline / health -------------------------------------------------------


def run_deadline(sc: Dict[str, Any]) -> None:
    total = sc["deadline"]["total_ms"] / 1000.0
    clock = FakeClock()
    deadline: Optional[seawall.Deadline] = None
    for i, step in enumerate(sc["steps"]):
        clock.advance(step)
        if deadline is None:
            deadline = seawall.Deadline(total, clock=clock)
        if "expect_remaining_ms" in step:
            expect(i, ns(step["expect_remaining_ms"]), deadline.remaining_ns())
        if "allocate_ms" in step:
            expect(i, ns(step["expect_ms"]), int(round(deadline.allocate(step["allocate_ms"] / 1000.0) * 1e9)))
        if "expect_expired" in step:
            expect(i, step["expect_expired"], deadline.expired())


def run_health(sc: Dict[str, Any]) -> None:
    cfg = sc["health"]
    clock = FakeClock()
    kw: Dict[str, Any] = {}
    for key, value in cfg.items():
        if key in ("buckets", "degraded_error_rate", "unhealthy_error_rate"):
            kw[key] = value
        elif key == "bucket_ms":
            kw["bucket_width"] = value / 1000.0
        elif key in ("degraded_p99_ms", "unhealthy_p99_ms"):
            kw[key[:-3]] = value / 1000.0
        else:
            raise Malformed(f"unknown health key {key!r}")
    h = seawall.Health(clock=clock, **kw)
    for i, step in enumerate(sc["steps"]):
        clock.advance(step)
        if "record_ms" in step:
            for _ in range(step.get("count", 1)):
                h.record(step["record_ms"] / 1000.0, step.get("failed", False))
        snap = h.snapshot()
        if "expect_calls" in step:
            expect(i, step["expect_calls"], snap["calls"])
        if "expect_errors" in step:
            expect(i, step["expect_errors"], snap["errors"])
        if "expect_percentile" in step:
            want = step["approx_ms"]
            got = s_to_ns(h.percentile(step["expect_percentile"]))
            ok = (want is None and got is None) or (
                want is not None and got is not None and abs(got - ns(want)) * 32 <= ns(want)
            )
            if not ok:
                raise Fail(f"step {i} (0-based): expected p{step['expect_percentile']} ≈ {want} ms (± 1/32), got {got}")
        if "expect_status" in step:
            expect(i, step["expect_status"], snap["status"])


NS_MAX = 2**64 - 1


def run_rate_limiter(sc: Dict[str, Any]) -> None:
    cfg = sc["rate_limiter"]
    unknown = set(cfg) - {"rate", "period_ms", "burst"}
    if unknown:
        raise Malformed(f"unknown rate_limiter keys {sorted(unknown)}")
    clock = FakeClock()
    limiter = seawall.RateLimiter(cfg["rate"], per=cfg["period_ms"] / 1000.0, burst=cfg["burst"], clock=clock)
    for i, step in enumerate(sc["steps"]):
        clock.advance(step)
        unknown = set(step) - {"at_ms", "acquire", "expect", "expect_retry_after_ms"}
        if unknown:
            raise Malformed(f"step {i}: unknown keys {sorted(unknown)}")
        if not ({"acquire", "expect", "expect_retry_after_ms"} & set(step)):
            continue
        try:
            wait = limiter.take(step.get("acquire", 1))
            got, retry_ns = ("admitted", None) if wait is None else ("rejected", NS_MAX if math.isinf(wait) else s_to_ns(wait))
        except seawall.SeawallConfigError:
            got, retry_ns = "config_error", None
        if "expect" in step:
            expect(i, step["expect"], got)
        if "expect_retry_after_ms" in step:
            expect(i, ("rejected", min(ns(step["expect_retry_after_ms"]), NS_MAX)), (got, retry_ns))


RUNNERS: Dict[str, Callable[[Dict[str, Any]], None]] = {
    "breaker": run_breaker,
    "backoff": run_backoff,
    "retry_budget": run_retry_budget,
    "retry_throttle": run_retry_throttle,
    "semaphore": run_semaphore,
    "deadline": run_deadline,
    "health": run_health,
    "rate_limiter": run_rate_limiter,
}


def run_file(path: Path) -> Tuple[str, str, str]:
    """``(id, "PASS" | "FAIL" | "SKIP", why)``."""
    sid = path.stem
    try:
        sc = json.loads(path.read_text())
        kinds = [k for k in PRIMITIVES if k in sc]
        if len(kinds) != 1:
            return sid, "FAIL", "malformed: needs exactly one primitive key"
        RUNNERS[kinds[0]](sc)
    except Fail as e:
        return sid, "FAIL", str(e)
    except (Malformed, KeyError, ValueError, TypeError) as e:
        return sid, "FAIL", f"malformed or unsupported: {type(e).__name__}: {e}"
    except Exception as e:  # noqa: BLE001 - a crash fails this scenario alone
        # Any other error (a bug of the runner or of the package) fails this
        # scenario; the ones after it must still run and be reported.
        return sid, "FAIL", f"crashed: {type(e).__name__}: {e}"
    return sid, "PASS", ""


def main(argv: List[str]) -> int:
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for d in scenario_dirs(argv):
        try:
            files = scenario_files([d])
        except OSError as e:
            # A folder that cannot be read fails; the other folders still run.
            counts["FAIL"] += 1
            print(f"FAIL {d}: cannot read the scenario folder: {e}")
            continue
        for path in files:
            sid, verdict, why = run_file(path)
            counts[verdict] += 1
            print(f"{verdict} {sid}" + (f": {why}" if why else ""))
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
