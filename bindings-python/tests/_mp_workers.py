"""Worker processes for test_shared.py (spawned: they import this module)."""

import time

import seawall

CONFIG = dict(
    window=seawall.CountWindow(8),
    minimum_calls=8,
    failure_rate_threshold=50.0,
    open_duration=2.0,
    half_open_max_calls=2,
    half_open_success_threshold=2,
)


def worker(name, barrier, results):
    seen = []
    b = seawall.CircuitBreaker(shared=name, listeners=[lambda br, o, n: seen.append((o.value, n.value))], **CONFIG)
    rejected = failed = 0

    def fail():
        raise ValueError("dependency down")

    barrier.wait()
    for _ in range(6):
        try:
            b.call(fail)
        except ValueError:
            failed += 1
        except seawall.CircuitOpenError:
            rejected += 1
    barrier.wait()  # everyone is done failing
    after_failures = b.metrics()
    time.sleep(2.1)  # past open_duration
    barrier.wait()
    probe = False
    try:
        with b:
            probe = True
            time.sleep(1.0)  # probes hold their slots while the others try
    except seawall.CircuitOpenError:
        pass
    barrier.wait()
    b.poll()
    results.put(
        dict(
            failed=failed,
            rejected=rejected,
            probe=probe,
            transitions_after_failures=after_failures["totals"]["transitions"],
            openings_after_failures=after_failures["openings"],
            state_after_failures=after_failures["state"],
            final_state=b.state.value,
            final_transitions=b.metrics()["totals"]["transitions"],
            seen=seen,
        )
    )
