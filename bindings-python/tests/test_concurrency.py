"""No global lock around user code (pybreaker #55), and exact totals under
threads."""

import threading
import time

import seawall


def run_threads(n, target):
    threads = [threading.Thread(target=target) for _ in range(n)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - t0


def test_five_threads_of_slow_calls_run_in_parallel_through_one_breaker():
    b = seawall.CircuitBreaker()

    @b
    def slow():
        time.sleep(0.2)

    elapsed = run_threads(5, slow)
    # Serialised they would take 1.0 s; in parallel about 0.2 s.
    assert 0.2 <= elapsed < 0.5, elapsed
    assert b.metrics()["totals"]["successes"] == 5


def test_five_threads_through_a_whole_policy_run_in_parallel():
    policy = seawall.wrap(seawall.CircuitBreaker(), seawall.Retry(), seawall.Bulkhead(5))

    @policy
    def slow():
        time.sleep(0.2)

    assert 0.2 <= run_threads(5, slow) < 0.5


def test_totals_are_exact_under_threads():
    b = seawall.CircuitBreaker(failure_rate_threshold=None)
    per_thread = 5000

    @b
    def ok():
        return 1

    @b
    def bad():
        raise OSError()

    def work():
        for i in range(per_thread):
            if i % 5 == 0:
                try:
                    bad()
                except OSError:
                    pass
            else:
                ok()

    run_threads(4, work)
    t = b.metrics()["totals"]
    assert t["admitted"] == 4 * per_thread
    assert t["failures"] == 4 * per_thread // 5
    assert t["successes"] == 4 * per_thread * 4 // 5
