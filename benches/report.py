#!/usr/bin/env python3
"""Turn one `benches/run` into Markdown tables (Python 3.9+ standard library only).

    python3 benches/report.py table DIR        # the tables of the run whose results are in DIR
    python3 benches/report.py table DIR --write benches/RESULTS.md   # the same, also written there
    python3 benches/report.py callgrind BIN DIR [N]   # instruction counts per operation

`table` reads what the run left in DIR (default target/bench-run):
criterion's estimates (DIR/criterion/**/new/estimates.json), compare.json,
contended.json and memory.json from the Rust harness, python.json and node.json
from the binding scripts when they ran, notes.txt and loadavg-start from
benches/run; versions come from Cargo.lock. Nothing is copied by hand.
With `--write FILE` the tables also replace the generated part of FILE (the
repository's one place for figures, benches/RESULTS.md): everything above the
line ANALYSIS_MARKER, which starts the analysis written by hand for the dated
run and is kept as it is.

`callgrind` runs BIN (the `callgrind` bench binary) under valgrind once per
operation with --toggle-collect on that operation's function, divides the
instructions counted by N, and writes DIR/callgrind.json, the raw outputs and
an annotated listing per seawall operation (DIR/callgrind/).
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent

# Group id -> what is measured (one operation, one thread).
OPERATIONS = [
    ("breaker_closed", "seawall", "breaker, closed: acquire + record success"),
    ("breaker_closed", "seawall_count_window", "breaker, closed: acquire + record success, seawall with a count window of 100 calls (the peers' default window)"),
    ("breaker_rejected", "seawall", "breaker, open: rejected acquire"),
    ("breaker_trip", "seawall", "breaker: the failure record that trips it (a fresh breaker each time, built untimed)"),
    ("semaphore", "seawall", "semaphore: try_acquire + release (drop)"),
    ("retry_budget", "seawall", "retry budget: deposit + withdraw"),
    ("rate_limiter", "seawall", "rate limiter: try_acquire of one cell, admitted"),
    ("rate_limiter_rejected", "seawall", "rate limiter: try_acquire of one cell, rejected"),
]
CONTENDED = [
    ("breaker_closed", "seawall", "breaker, closed: acquire + record success"),
    ("breaker_closed", "seawall_count_window", "breaker, closed, seawall count window of 100"),
    ("breaker_rejected", "seawall", "breaker, open: rejected acquire"),
    ("semaphore", "seawall", "semaphore: try_acquire + release"),
    ("retry_budget", "seawall", "retry budget: deposit + withdraw"),
    ("rate_limiter", "seawall", "rate limiter: try_acquire of one cell, admitted"),
    ("rate_limiter_rejected", "seawall", "rate limiter: try_acquire of one cell, rejected"),
]
# How much faster than the fastest Rust peer seawall must be, per (group,
# implementation); the rate limiter's peer, governor, runs the same GCRA on one
# atomic word, so there the target is to be no slower.
ONE_THREAD_FACTOR = {
    ("breaker_closed", "seawall"): 1.5, ("breaker_closed", "seawall_count_window"): 1.2,
    ("breaker_rejected", "seawall"): 4, ("breaker_trip", "seawall"): 1, ("semaphore", "seawall"): 1.3,
    ("retry_budget", "seawall"): 3, ("rate_limiter", "seawall"): 1, ("rate_limiter_rejected", "seawall"): 1,
}
CONTENDED_FACTOR = {
    ("breaker_closed", "seawall"): 3, ("breaker_closed", "seawall_count_window"): 3,
    ("breaker_rejected", "seawall"): 1.5, ("semaphore", "seawall"): 1.3, ("retry_budget", "seawall"): 3,
    ("rate_limiter", "seawall"): 1, ("rate_limiter_rejected", "seawall"): 1,
}
# The closed path against the floor: ≤ this many `fetch_add`s (time window, count
# window of 100), and ≤ this many 128-bit load + compare_exchange (time window).
CLOSED_FETCH_ADD = {"seawall": 4.5, "seawall_count_window": 6}
CLOSED_CMPXCHG16B = 1.3
# Implementation id -> (crate in Cargo.lock, how it is driven).
PEERS = {
    "recloser": ("recloser", "`Recloser::default()`, `call(|| …)`"),
    "failsafe": ("failsafe", "`Config::new().build()`, `call(|| …)`"),
    "tower-resilience": ("tower-resilience-circuitbreaker", "tower `Service`, polled once with a no-op waker"),
    "tokio": ("tokio", "`Semaphore::try_acquire` + drop"),
    "async-lock": ("async-lock", "`Semaphore::try_acquire` + drop"),
    "tower": ("tower", "`TpsBudget` deposit + withdraw"),
    "governor": ("governor", "`RateLimiter::direct(quota)` on its default (quanta) clock, `check()`"),
    "governor_fake_clock": ("governor", "`RateLimiter::direct_with_clock(quota, FakeRelativeClock)`, `check()`"),
}
SEAWALL_IMPLS = ("seawall", "seawall_count_window")

RESULTS_TITLE = """# seawall benchmark results

The latest full run of `benches/run`, written by `benches/report.py table DIR
--write benches/RESULTS.md`; how it is measured and how to run it:
[README.md](README.md). Ratios, not absolute times, are the claim: seawall and its
peers ran in the same run on the same machine.
"""
# The hand-written analysis of a run starts at this line; --write keeps it.
ANALYSIS_MARKER = "<!-- analysis: written by hand for the run above; benches/report.py --write keeps what follows -->"


def load(path: Path) -> Optional[Any]:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def lock_versions() -> Dict[str, str]:
    text = (ROOT / "Cargo.lock").read_text(encoding="utf-8")
    out: Dict[str, str] = {}
    for name, version in re.findall(r'\[\[package\]\]\nname = "([^"]+)"\nversion = "([^"]+)"', text):
        out[name] = f"{out[name]}, {version}" if name in out else version
    return out


def peer_label(imp: str, versions: Dict[str, str]) -> str:
    if imp not in PEERS:
        return imp
    krate = PEERS[imp][0]
    clock = " (fake clock)" if imp.endswith("_fake_clock") else ""
    return f"{krate} {versions.get(krate, '?')}{clock}"


def criterion_medians(dir_: Path) -> Dict[str, float]:
    """full_id -> median ns per iteration of this run (criterion's `new`)."""
    out: Dict[str, float] = {}
    for bench in dir_.glob("**/new/benchmark.json"):
        meta = load(bench)
        est = load(bench.parent / "estimates.json")
        if meta and est:
            out[meta["full_id"]] = est["median"]["point_estimate"]
    return out


def ns(x: Optional[float]) -> str:
    if x is None:
        return "—"
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 1000 else f"{x:,.0f}".replace(",", " ")


def ratio(x: Optional[float]) -> str:
    if x is None:
        return "—"
    return f"{x:.2f}×" if x < 100 else f"{x:.0f}×"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def cores() -> str:
    try:
        return subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return str(os.cpu_count())


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])
    except OSError:
        return "?"


def tool_version(cmd: List[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


class Targets:
    def __init__(self) -> None:
        self.lines: List[str] = []

    def add(self, ok: Optional[bool], text: str) -> None:
        mark = "not measured" if ok is None else "**met**" if ok else "**missed**"
        self.lines.append(f"- {mark}: {text}")


def node_targets(n: Dict[str, float], bare: float, v: Dict[str, str], targets: "Targets") -> None:
    """The Node bulkhead and refusal rows and the Node overhead targets (ratios of one run)."""
    p = print
    rows = [
        ("`execute` through a bulkhead with room", "seawall bulkhead execute", "cockatiel bulkhead execute", 2.0),
        ("an open breaker's rejection (caught)", "seawall open rejection", "cockatiel open rejection", 1.0),
        ("a full bulkhead's refusal (caught)", "seawall bulkhead refusal", "cockatiel bulkhead refusal", 1.0),
    ]
    p("| operation | seawall ns (overhead) | peer | peer ns (overhead) | seawall ÷ peer, overhead |")
    p("|---|--:|---|--:|--:|")
    for label, mine, peer, _ in rows:
        m, pv = n.get(mine), n.get(peer)
        r = (m - bare) / (pv - bare) if m and pv and pv > bare else None
        p(f"| {label} | {ns(m)} ({ns(m - bare) if m else '—'}) | cockatiel {v.get('cockatiel', '')} | "
          f"{ns(pv)} ({ns(pv - bare) if pv else '—'}) | {ratio(r) if r is not None else '—'} |")
    p()
    def over(mine: str, peer: str) -> Optional[float]:
        m, pv = n.get(mine), n.get(peer)
        return (m - bare) / (pv - bare) if m and pv and pv > bare else None
    r = over("seawall execute", "cockatiel execute")
    targets.add(None if r is None else r <= 1, f"Node closed-breaker `execute` overhead ≤ cockatiel's: {r or float('nan'):.2f}×")
    for label, mine, peer, bound in rows:
        r = over(mine, peer)
        targets.add(None if r is None else r <= bound,
                    f"Node {label}: overhead ≤ {bound:g}× cockatiel's: {r or float('nan'):.2f}×")


# The Python ratios "at least where they are": the issue's figures (pybreaker,
# circuitbreaker, tenacity), and stamina's from the first recorded run (dc2d191).
PYTHON_PEER_FLOOR = [
    ("seawall breaker", "pybreaker", "pybreaker", 11.6),
    ("seawall breaker", "circuitbreaker", "circuitbreaker", 4.5),
    ("seawall retry", "tenacity retry", "tenacity", 149),
    ("seawall retry", "stamina retry", "stamina", 125),
]
PYTHON_WITH_OVER_DECORATOR = 2.0


def python_targets(o: Dict[str, float], targets: "Targets") -> None:
    """The Python verdicts: `with breaker:` against the decorator, and each peer ratio kept."""
    mine, dec = o.get("seawall breaker (with)"), o.get("seawall breaker")
    r = mine / dec if mine and dec else None
    targets.add(None if r is None else r <= PYTHON_WITH_OVER_DECORATOR,
                f"Python `with breaker:` overhead ≤ {PYTHON_WITH_OVER_DECORATOR:g}× the decorator's: "
                f"{r or float('nan'):.2f}×")
    for mine_key, peer_key, dist, floor in PYTHON_PEER_FLOOR:
        m, pv = o.get(mine_key), o.get(peer_key)
        r = pv / m if m and pv else None
        targets.add(None if r is None else r >= floor,
                    f"Python {dist} ÷ seawall overhead ≥ {floor:g}× (where it was): {r or float('nan'):.2f}×")


def handoff_table(h: Dict[str, Any], targets: "Targets") -> None:
    """Waiting for a bulkhead permit (benches/benches/handoff.rs): shared vs local, cross-process hand-off."""
    p = print
    c, ho = h["contended_calls_per_s"], h["handoff"]
    share = c["shared"] / c["local"] if c.get("local") else None
    p(f"### Rust, waiting for a bulkhead permit (`benches/benches/handoff.rs`, {h['threads']} threads, "
      f"{h['permits']} permits, median of {h['rounds']} rounds of {h['round_ms']:.0f} ms)")
    p()
    p("| measure | seawall shared | seawall local | shared ÷ local |")
    p("|---|--:|--:|--:|")
    p(f"| contended within one process, calls/s | {c['shared']:,.0f} | {c['local']:,.0f} | "
      f"{ratio(share) if share is not None else '—'} |")
    p(f"| cross-process hand-off, release to the waiter's return (p50 / p90 of {ho['count']}) | "
      f"{ho['p50_ns'] / 1e3:.1f} / {ho['p90_ns'] / 1e3:.1f} µs | | |")
    p()
    targets.add(None if share is None else share >= 0.5,
                f"shared bulkhead contended within one process ≥ 50 % of the local one's throughput: {share or float('nan'):.2f}×")
    targets.add(ho["p50_ns"] <= 100_000, f"cross-process bulkhead hand-off p50 ≤ 100 µs: {ho['p50_ns'] / 1e3:.1f} µs")


def table(out: Path) -> int:
    versions = lock_versions()
    medians = criterion_medians(out / "criterion")
    compare = load(out / "compare.json")
    contended = load(out / "contended.json")
    memory = load(out / "memory.json")
    py = load(out / "python.json")
    node = load(out / "node.json")
    handoff = load(out / "handoff.json")
    notes = (out / "notes.txt").read_text(encoding="utf-8").splitlines() if (out / "notes.txt").exists() else []
    load_start = (out / "loadavg-start").read_text(encoding="utf-8").strip() if (out / "loadavg-start").exists() else "?"
    targets = Targets()
    missed_ops: List[str] = []  # callgrind ids of the operations of missed targets
    p = print

    commit = tool_version(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    p(f"## seawall performance, {datetime.date.today().isoformat()}")
    p()
    p(f"Machine: {cpu_model()}, {cores()} cores, {platform.system()} {platform.release()}; "
      f"load average {load_start} at the start, {loadavg()} at the end. "
      f"{tool_version(['rustc', '--version'])}; commit {commit}.")
    peers = ", ".join(f"{k} {versions.get(k, '?')}" for k in
                      ("recloser", "failsafe", "tower-resilience-circuitbreaker", "tokio", "async-lock", "tower", "governor", "criterion"))
    p(f"Rust peers (crates.io, Cargo.lock): {peers}.")
    p()

    # ---------------------------------------------------------------- one thread
    rows = {r["id"]: r for r in compare["benchmarks"]} if compare else {}
    fa1, fa2 = medians.get("floor/fetch_add"), medians.get("floor_again/fetch_add")
    floor_fa = (fa1 + fa2) / 2 if fa1 and fa2 else fa1 or fa2
    if not medians or not compare:
        p("**Rust single-thread benchmarks: no results** (did `cargo bench --bench compare` run?)")
    else:
        p("### Rust, one thread: ns per operation (criterion median)")
        p()
        p("| operation | seawall ns | seawall ÷ `fetch_add` | peer | peer ns | peer ÷ seawall | peer allocations / op |")
        p("|---|--:|--:|---|--:|--:|--:|")
        worst_vs_peer: List[Tuple[Tuple[str, str], str, Optional[float]]] = []
        for group, imp, label in OPERATIONS:
            sw = medians.get(f"{group}/{imp}")
            peers_here = [r for r in compare["benchmarks"] if r["group"] == group and r["impl"] not in SEAWALL_IMPLS]
            first = True
            best: Optional[float] = None
            for r in peers_here or [None]:
                pn = medians.get(r["id"]) if r else None
                if pn is not None:
                    best = pn if best is None else min(best, pn)
                cells = [label, ns(sw), ratio(sw / floor_fa) if sw and floor_fa else "—"] if first else ["", "", ""]
                cells += [peer_label(r["impl"], versions) if r else "(no Rust peer)", ns(pn),
                          ratio(pn / sw) if pn and sw else "—",
                          f"{r['allocs_per_op']:g}" if r else ""]
                p("| " + " | ".join(cells) + " |")
                first = False
            if peers_here:
                worst_vs_peer.append(((group, imp), label, best / sw if best and sw else None))
        p()
        ca = medians.get("floor/compare_exchange")
        c16 = medians.get("floor/load_cmpxchg16b")
        l16 = medians.get("floor/load128_fetch_add")
        two_cas = medians.get("floor/cas64_cas128")
        now_ns = medians.get("floor/instant_now")
        spread = abs(fa1 - fa2) / min(fa1, fa2) * 100 if fa1 and fa2 else None
        p(f"Floor: one uncontended `AtomicU64::fetch_add` {ns(fa1)} ns at the start and {ns(fa2)} ns at the end "
          f"of the run (they differ by {spread:.0f} %: the noise of this run); the ratios use their mean, {ns(floor_fa)} ns. "
          f"An uncontended load + `compare_exchange`: {ns(ca)} ns; the same on a 128-bit word (`lock cmpxchg16b`, "
          f"what seawall's count window and breaker state word use; the time window's buckets are 64-bit words): {ns(c16)} ns"
          f"{f' = {c16 / floor_fa:.2f}× `fetch_add`' if c16 and floor_fa else ''}. A 128-bit load + `fetch_add` on "
          f"another line (what an open rejection must do: read the state word, count the rejection): {ns(l16)} ns. "
          f"A load + 64-bit `compare_exchange` and a load + 128-bit one on another line (what a count-window record "
          f"must do: claim its slot, commit the counts): {ns(two_cas)} ns"
          f"{f' = {two_cas / floor_fa:.2f}× `fetch_add`' if two_cas and floor_fa else ''}. "
          f"`Instant::now()`: {ns(now_ns)} ns — "
          f"seawall takes `now` from its caller, the peers read the clock themselves (recloser only when open, "
          f"failsafe and tower-resilience on every call), so a caller of seawall adds one or two of these per call.")
        trip_counts = ", ".join(f"{peer_label(r['impl'], versions) if r['impl'] in PEERS else r['impl']} {r['failures_to_trip'] - 1}"
                                for r in compare["benchmarks"] if "failures_to_trip" in r)
        p(f"Trips: each timed failure opens a breaker built outside the timed loop (criterion `iter_batched_ref`, "
          f"batches of {compare.get('trip_batch')}) with its default configuration and the failures it needs "
          f"less one already recorded ({trip_counts}).")
        p("Rate limiters: seawall and governor get the same quotas, 10⁹ cells per second in bursts of 2³² − 1 "
          "(every check admitted) and one cell per hour, already taken (every check rejected); governor reads "
          "its clock on every check (quanta), its fake-clock rows and seawall do not.")
        sw_allocs = [r for r in compare["benchmarks"] if r["impl"] in SEAWALL_IMPLS]
        p(f"Allocations: counted per thread by a counting global allocator over {compare.get('alloc_check_calls')} calls "
          f"(200 trips) of each operation, outside the timed loop; the harness stops if a seawall operation allocates.")
        p()
        # The closed path against the floor, then against the peers.
        for imp in SEAWALL_IMPLS:
            sw = medians.get(f"breaker_closed/{imp}")
            window = "default time window" if imp == "seawall" else "count window of 100"
            if sw and floor_fa and sw / floor_fa > CLOSED_FETCH_ADD[imp] \
                    or imp == "seawall" and sw and c16 and sw / c16 > CLOSED_CMPXCHG16B:
                missed_ops.append(CALLGRIND_OF[("breaker_closed", imp)])
            if sw and floor_fa:
                r = sw / floor_fa
                targets.add(r <= CLOSED_FETCH_ADD[imp], f"closed acquire + record ≤ {CLOSED_FETCH_ADD[imp]:g}× one "
                                                        f"uncontended `fetch_add` ({window}): {r:.2f}×")
            if imp == "seawall":
                targets.add(None if not (sw and c16) else sw / c16 <= CLOSED_CMPXCHG16B,
                            f"closed acquire + record ≤ {CLOSED_CMPXCHG16B:g}× one load + 128-bit `compare_exchange` "
                            f"on one line ({window}): {ratio(sw / c16) if sw and c16 else '—'}")
        for key, label, r in worst_vs_peer:
            factor = ONE_THREAD_FACTOR.get(key, 5)
            if r is not None and r < factor and key in CALLGRIND_OF:
                missed_ops.append(CALLGRIND_OF[key])
            goal = "no slower than" if factor == 1 else f"≥ {factor}× faster than"
            targets.add(None if r is None else r >= factor,
                        f"{goal} the fastest Rust peer (ns per operation), {label}: "
                        f"peer ÷ seawall {ratio(r) if r else '—'}")
        allocating = [r["id"] for r in sw_allocs if r["allocs_per_op"] != 0]
        targets.add(not allocating,
                    f"zero allocations per operation: {len(sw_allocs)} seawall operations, "
                    f"{'none allocated' if not allocating else 'allocating: ' + ', '.join(allocating)} "
                    f"(and constructing seawall's breaker, semaphore and retry budget allocates nothing: memory table)")

    # ---------------------------------------------------------------- contended
    if not contended:
        p("**Contended benchmarks: no results** (did `cargo bench --bench contended` run?)")
    else:
        c = {r["id"]: r for r in contended["benchmarks"]}
        t = contended["threads"]
        shared = c.get("floor/fetch_add_shared", {}).get("mops_median")
        private = c.get("floor/fetch_add_private", {}).get("mops_median")
        p(f"### Rust, {t} threads on one shared object: million operations per second, all threads together")
        p()
        p(f"Median of {contended['rounds']} rounds of about {contended['round_ms']:.0f} ms each, contenders taking turns "
          f"(slowest and fastest round in brackets). Floor: `fetch_add` on one shared cache line "
          f"{ns(shared)} Mops/s; on a private line per thread (nothing shared) {ns(private)} Mops/s.")
        p()
        p(f"| operation | seawall Mops/s | seawall ÷ shared `fetch_add` | peer | peer Mops/s | seawall ÷ peer |")
        p("|---|--:|--:|---|--:|--:|")
        for group, imp, label in CONTENDED:
            s = c.get(f"{group}/{imp}")
            if not s:
                continue
            sw = s["mops_median"]
            peers_here = [r for r in contended["benchmarks"] if r["group"] == group and r["impl"] not in SEAWALL_IMPLS]
            first = True
            best = None
            for r in peers_here or [None]:
                pm = r["mops_median"] if r else None
                if pm is not None:
                    best = pm if best is None else max(best, pm)
                cells = ([label, f"{sw:.2f} ({s['mops_min']:.1f}–{s['mops_max']:.1f})",
                          ratio(sw / shared) if shared else "—"] if first else ["", "", ""])
                cells += [peer_label(r["impl"], versions) if r else "(no Rust peer)",
                          f"{pm:.2f} ({r['mops_min']:.1f}–{r['mops_max']:.1f})" if r else "—",
                          ratio(sw / pm) if pm else "—"]
                p("| " + " | ".join(cells) + " |")
                first = False
            if best:
                factor = CONTENDED_FACTOR.get((group, imp), 3)
                if sw / best < factor and (group, imp) in CALLGRIND_OF:
                    missed_ops.append(CALLGRIND_OF[(group, imp)])
                goal = "≥ the best peer's" if factor == 1 else f"≥ {factor}× the best peer's"
                targets.add(sw / best >= factor, f"{t}-thread throughput {goal}, {label}: {sw / best:.2f}×")
        p()
        p("Each seawall thread advances its own clock by 1 µs per operation (1 ns per rate-limiter check, "
          "the TAT's own pace under the admitting quota). tower-resilience's calls are driven "
          "synchronously; a `Pending` poll (its `tokio::sync::Mutex` is taken) yields the thread and polls again, "
          "and since that mutex is fair it hands the lock to the waiting thread, which on a busy machine may not be "
          "running: hence its wide spread.")
        if not any(r["group"] == "breaker_rejected" and r["impl"] == "tower-resilience" for r in contended["benchmarks"]):
            p("tower-resilience is not in the open-breaker row: when two threads race for its circuit "
              "mutex while it is open, the loser arms a `tokio::time::Sleep`, which needs a tokio runtime.")
        p()

    # ---------------------------------------------------------------- memory
    if memory:
        p("### Memory")
        p()
        p("| seawall type | `size_of` | |")
        p("|---|--:|---|")
        for t_ in memory["types"]:
            size = f"{t_['size_of']:,}".replace(",", " ")
            p(f"| `{t_['type']}` | {size} B | {t_.get('note', '')} |")
        p()
        p("One instance: `size_of` of what the caller holds + heap bytes allocated by constructing it "
          "(counting global allocator; bytes requested, allocator overhead not included).")
        p()
        p("| instance | seawall | peer | peer bytes | peer ÷ seawall |")
        p("|---|--:|---|--:|--:|")
        inst = memory["instances"]
        for group in ("breaker", "semaphore", "retry_budget", "rate_limiter"):
            for sw in [i for i in inst if i["group"] == group and i["impl"] in SEAWALL_IMPLS]:
                first = True
                for r in [i for i in inst if i["group"] == group and i["impl"] not in SEAWALL_IMPLS]:
                    cells = ([f"{group}: {sw['what']}", f"{sw['total_bytes']} B ({sw['heap_allocs']} allocations)"]
                             if first else ["", ""])
                    cells += [f"{peer_label(r['impl'], versions)}: {r['what']}",
                              f"{r['size_of']} + {r['heap_bytes']} B heap in {r['heap_allocs']} allocations",
                              ratio(r["total_bytes"] / sw["total_bytes"])]
                    p("| " + " | ".join(cells) + " |")
                    first = False
        p()

    # ---------------------------------------------------------------- bindings
    if py:
        o, n = py["overhead_ns"], py["ns_per_call"]
        v = py.get("versions", {})
        p(f"### Python {py['python']}: overhead per call over a bare call, ns "
          f"(`benches/python/bench_overhead.py`, best of {py['rounds']} rounds of {py['calls']} calls)")
        p()
        p("| operation | seawall ns | peer | peer ns | peer ÷ seawall |")
        p("|---|--:|---|--:|--:|")
        for label, mine, others in [
            ("decorated no-op through a closed circuit breaker", "seawall breaker", [("pybreaker", "pybreaker"), ("circuitbreaker", "circuitbreaker")]),
            ("decorated no-op through retry (succeeds at once)", "seawall retry", [("tenacity retry", "tenacity"), ("stamina retry", "stamina")]),
        ]:
            first = True
            for key, dist in others:
                cells = [label, ns(o.get(mine))] if first else ["", ""]
                pv = o.get(key)
                cells += [f"{dist} {v.get(dist, '')}".strip() if key in o else f"{dist} (not installed)", ns(pv),
                          ratio(pv / o[mine]) if pv and o.get(mine) else "—"]
                p("| " + " | ".join(cells) + " |")
                first = False
        ctx = ", ".join(f"{k} {ns(o[k])}" for k in o if k.startswith("seawall") and k not in ("seawall breaker", "seawall retry"))
        p()
        p(f"A bare call costs {ns(n.get('bare call'))} ns. seawall's other overheads: {ctx} ns.")
        p()
        python_targets(o, targets)
        rl = py.get("rate_limiter")
        if rl:
            c = rl["ns_per_check"]
            mine, peer = c.get("seawall RateLimiter try_acquire"), c.get("limits moving window hit")
            p(f"Rate limiter, an admitted check, ns per call (best batch of {rl['batch']} after a reset; "
              "`limits`' moving window inserts each hit at the front of its list, so this is its cheapest case):")
            p()
            p("| operation | seawall ns | peer | peer ns | peer ÷ seawall |")
            p("|---|--:|---|--:|--:|")
            p(f"| `RateLimiter.try_acquire()` vs `MovingWindowRateLimiter(MemoryStorage()).hit()` | {ns(mine)} | "
              f"limits {v.get('limits', '(not installed)')} | {ns(peer)} | {ratio(peer / mine) if mine and peer else '—'} |")
            p()
            targets.add(None if not (mine and peer) else peer / mine >= 5,
                        f"Python rate limiter ≥ 5× cheaper per admitted check than limits (moving window, memory): "
                        f"{(peer / mine) if mine and peer else float('nan'):.1f}×")
    if node:
        n = node["ns_per_call"]
        bare = n.get("bare await", 0.0)
        v = node.get("versions", {})
        p(f"### Node {node['node']}: ns per call and overhead over a bare `await` "
          f"(`benches/node/bench.js`, median of {node['rounds']} rounds of {node['calls']} calls)")
        p()
        p("| operation | seawall ns (overhead) | peer | peer ns (overhead) | peer ÷ seawall, overhead |")
        p("|---|--:|---|--:|--:|")
        for label, mine, others in [
            ("`execute` on a resolved no-op, closed breaker", "seawall execute",
             [("opossum fire (default options)", f"opossum {v.get('opossum', '')} (default options)"),
              ("opossum fire (timeout: false)", f"opossum {v.get('opossum', '')} (`timeout: false`)"),
              ("cockatiel execute", f"cockatiel {v.get('cockatiel', '')}")]),
            ("`seawall/opossum` `fire()`, default options (10 s timeout)", "seawall/opossum fire (default options)",
             [("opossum fire (default options)", f"opossum {v.get('opossum', '')} (default options)")]),
            ("`seawall/opossum` `fire()`, `timeout: false`", "seawall/opossum fire (timeout: false)",
             [("opossum fire (timeout: false)", f"opossum {v.get('opossum', '')} (`timeout: false`)")]),
            ("`wrap(retry, breaker, timeout)`", "seawall wrap(retry, breaker, timeout)",
             [("cockatiel wrap(retry, breaker, timeout)", f"cockatiel {v.get('cockatiel', '')} `wrap`")]),
        ]:
            first = True
            for key, plabel in others:
                m, pv = n.get(mine), n.get(key)
                cells = [label, f"{ns(m)} ({ns(m - bare) if m else '—'})"] if first else ["", ""]
                cells += [plabel, f"{ns(pv)} ({ns(pv - bare) if pv else '—'})",
                          ratio((pv - bare) / (m - bare)) if pv and m and m > bare else "—"]
                p("| " + " | ".join(cells) + " |")
                first = False
        p()
        p(f"A bare `await` costs {ns(bare)} ns.")
        p()
        mine, peer = n.get("seawall/opossum fire (default options)"), n.get("opossum fire (default options)")
        cheaper = (peer - bare) / (mine - bare) if mine and peer and mine > bare else None
        targets.add(None if cheaper is None else cheaper >= 3,
                    f"Node seawall/opossum fire() ≥ 3× cheaper than opossum's (overhead, default options): "
                    f"{cheaper if cheaper is not None else float('nan'):.1f}×")
        node_targets(n, bare, v, targets)
        rl = node.get("rate_limiter")
        if rl:
            c = rl["ns_per_call"]
            mine, sync, peer = (c.get("seawall RateLimiter execute"), c.get("seawall RateLimiter tryAcquire"),
                                c.get("bottleneck schedule (local)"))
            p(f"Rate limiter, an admitted call, ns per call (median of {node['rounds']} rounds of {rl['calls']} calls, "
              f"bottleneck's of {rl['bottleneck_calls']}: its local datastore yields to the event loop with "
              "`setTimeout(0)` for each job):")
            p()
            p("| operation | seawall ns | peer | peer ns | peer ÷ seawall |")
            p("|---|--:|---|--:|--:|")
            p(f"| `await limiter.execute(noop)` vs `await bottleneck.schedule(noop)` | {ns(mine)} | "
              f"bottleneck {v.get('bottleneck', '')} (local) | {ns(peer)} | {ratio(peer / mine) if mine and peer else '—'} |")
            p(f"| `limiter.tryAcquire()` (synchronous) | {ns(sync)} | | | |")
            p()
            targets.add(None if not (mine and peer) else peer / mine >= 5,
                        f"Node rate limiter ≥ 5× cheaper per admitted call than bottleneck (local): "
                        f"{(peer / mine) if mine and peer else float('nan'):.1f}×")
        ho = node.get("handoff")
        if ho:
            # benches/node/handoff.js: the Rust row's hand-off, to a Node waiter (its waker thread).
            p(f"Shared bulkhead, cross-process hand-off to a Node waiter, release to the start of its call "
              f"(`benches/node/handoff.js`, p50 / p90 of {ho['count']}): "
              f"{ho['p50_ns'] / 1e3:.1f} / {ho['p90_ns'] / 1e3:.1f} µs")
            p()
            targets.add(ho["p50_ns"] <= 100_000,
                        f"Node cross-process bulkhead hand-off p50 ≤ 100 µs: {ho['p50_ns'] / 1e3:.1f} µs")

    if handoff:
        handoff_table(handoff, targets)

    # ---------------------------------------------------------------- callgrind
    if (out / "callgrind.json").exists():
        print_callgrind(out, list(dict.fromkeys(missed_ops)))
        p()

    # ---------------------------------------------------------------- targets
    p("### Targets, from this run")
    p()
    for line in targets.lines:
        p(line)
    if any("**missed**" in line for line in targets.lines):
        p()
        p("A missed target's profile: above when valgrind ran in this run, else `benches/run --callgrind` "
          "(instructions per operation, and an annotated listing of each seawall hot path).")
    if notes:
        p()
        p("Notes from this run:")
        for line in notes:
            p(f"- {line}")
    return 0


# -------------------------------------------------------------------- callgrind

def callgrind(binary: str, out: Path, n: int) -> int:
    cg_dir = out / "callgrind"
    cg_dir.mkdir(parents=True, exist_ok=True)
    ops = [line.split() for line in subprocess.run([binary, "--list"], capture_output=True, text=True,
                                                    check=True).stdout.splitlines()]
    counts: Dict[str, float] = {}
    for group, imp, fn in ops:
        raw = cg_dir / f"{group}.{imp}.out"
        r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={raw}", "--collect-atstart=no",
                            f"--toggle-collect=*{fn}*", binary, f"{group}/{imp}", str(n)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stderr[-2000:])
            print(f"valgrind failed on {group}/{imp}", file=sys.stderr)
            return 1
        total = None
        for line in raw.read_text(encoding="utf-8").splitlines():
            if line.startswith("totals:") or line.startswith("summary:"):
                total = int(line.split()[1])
        if total is None:
            print(f"no instruction total in {raw}", file=sys.stderr)
            return 1
        counts[f"{group}/{imp}"] = total / n
        if imp.startswith("seawall"):
            listing = subprocess.run(["callgrind_annotate", "--auto=yes", str(raw)], capture_output=True, text=True)
            (cg_dir / f"{group}.{imp}.annotated.txt").write_text(listing.stdout, encoding="utf-8")
        print(f"  {group}/{imp}: {total / n:.1f} instructions per operation", file=sys.stderr)
    with open(out / "callgrind.json", "w", encoding="utf-8") as f:
        json.dump({"n": n, "instructions_per_op": counts}, f, indent=2)

    return print_callgrind(out)


# Report (group, implementation) -> callgrind id of the same operation
# (benches/benches/callgrind.rs).
CALLGRIND_OF = {("breaker_closed", "seawall"): "closed/seawall",
                ("breaker_closed", "seawall_count_window"): "closed/seawall_count",
                ("breaker_rejected", "seawall"): "rejected/seawall", ("breaker_trip", "seawall"): "trip/seawall",
                ("semaphore", "seawall"): "semaphore/seawall", ("retry_budget", "seawall"): "budget/seawall",
                ("rate_limiter", "seawall"): "rate/seawall", ("rate_limiter_rejected", "seawall"): "rate_rejected/seawall"}


def print_callgrind(out: Path, missed: Optional[List[str]] = None) -> int:
    """The instruction table of DIR/callgrind.json; with `missed` (callgrind ids),
    the top of each one's profile by function: the operation's floor, measured."""
    doc = load(out / "callgrind.json")
    if not doc:
        return 1
    n, counts = doc["n"], doc["instructions_per_op"]
    cg_dir = out / "callgrind"
    versions = lock_versions()
    peer_of = {"tower": "tower-resilience", "async_lock": "async-lock"}
    labels = {"closed": "breaker, closed: acquire + record success", "rejected": "breaker, open: rejected acquire",
              "trip": "breaker: the failure record that trips it", "semaphore": "semaphore: try_acquire + release",
              "budget": "retry budget: deposit + withdraw",
              "rate": "rate limiter: try_acquire of one cell, admitted",
              "rate_rejected": "rate limiter: try_acquire of one cell, rejected"}
    print(f"### Instructions per operation (valgrind --tool=callgrind, {n} operations each, "
          f"{tool_version(['valgrind', '--version'])})")
    print()
    print(f"Each count is everything executed inside the measured function, its `ret` included: one `fetch_add` "
          f"counts {counts.get('floor/fetch_add', 0):.0f} (`lock xadd`, `ret`), an uncontended load + `compare_exchange` "
          f"{counts.get('floor/compare_exchange', 0):.0f}. Instructions are not time (an atomic read-modify-write "
          f"costs many cycles, a plain instruction a fraction of one), but they do not move with the machine's load.")
    print()
    print("| operation | seawall instructions | peer | peer instructions | peer ÷ seawall |")
    print("|---|--:|---|--:|--:|")
    for group in ("closed", "rejected", "trip", "semaphore", "budget", "rate", "rate_rejected"):
        for mine in [k for k in counts if k.startswith(f"{group}/seawall")]:
            sw = counts[mine]
            label = labels[group] + (" (count window of 100)" if mine.endswith("_count") else "")
            first = True
            for k in [k for k in counts if k.startswith(f"{group}/") and "/seawall" not in k]:
                imp = k.split("/", 1)[1]
                if group == "budget" and imp == "tower":
                    name = f"tower {versions.get('tower', '?')}"
                else:
                    name = peer_label(peer_of.get(imp, imp), versions)
                cells = [label, f"{sw:.0f}"] if first else ["", ""]
                cells += [name, f"{counts[k]:.0f}", ratio(counts[k] / sw)]
                print("| " + " | ".join(cells) + " |")
                first = False
    print()
    print(f"Raw outputs, and for each seawall operation a listing of instructions per function and per source "
          f"line of core/src (`callgrind_annotate --auto=yes`): {cg_dir}/")
    for op in missed or []:
        listing = cg_dir / f"{op.replace('/', '.')}.annotated.txt"
        if not listing.exists():
            continue
        lines = listing.read_text(encoding="utf-8").splitlines()
        # The per-function part: the rows after its "file:function" header, up to a blank line.
        at = next((i for i, line in enumerate(lines) if "file:function" in line), None)
        if at is None:
            continue
        fns: List[str] = []
        for line in lines[at + 1:]:
            if not line.strip():
                if fns:
                    break
                continue
            if not line.startswith("-"):
                fns.append(line.rstrip())
        print()
        print(f"Profile of a missed target, {op}: {counts.get(op, 0):.0f} instructions per operation; "
              f"instructions of {n} operations by function (`callgrind_annotate`):")
        print()
        print("```")
        for line in fns[:12]:
            print(line[:160])
        print("```")
    return 0




def write_results(path: Path, tables: str) -> None:
    """Replaces the generated part of `path` with `tables`, keeping a hand-written
    analysis that follows ANALYSIS_MARKER (its figures name the run they explain)."""
    kept = ""
    if path.exists():
        old = path.read_text(encoding="utf-8")
        at = old.find(ANALYSIS_MARKER)
        if at >= 0:
            kept = "\n" + old[at:]
    path.write_text(RESULTS_TITLE + "\n" + tables + kept, encoding="utf-8")


def main(argv: List[str]) -> int:
    if len(argv) >= 1 and argv[0] == "table":
        write = None
        if "--write" in argv:
            at = argv.index("--write")
            if at + 1 >= len(argv):
                print("--write needs a file", file=sys.stderr)
                return 2
            write = Path(argv[at + 1])
            argv = argv[:at] + argv[at + 2:]
        out = Path(argv[1]) if len(argv) > 1 else ROOT / "target" / "bench-run"
        if write is None:
            return table(out)
        # table() prints; the same text goes to stdout and into the file.
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = table(out)
        sys.stdout.write(buf.getvalue())
        if rc == 0:
            write_results(write, buf.getvalue())
        return rc
    if len(argv) >= 3 and argv[0] == "callgrind":
        return callgrind(argv[1], Path(argv[2]), int(argv[3]) if len(argv) > 3 else 20_000)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
