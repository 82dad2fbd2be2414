"""What a decorator refuses or must carry along: pickling a decorated
module-level function, decorators stacked on @staticmethod / @classmethod, a
sync-decorated callable that returns a coroutine, and a sync call that overran
its policy's timeout."""

import asyncio
import concurrent.futures
import multiprocessing
import pickle
import subprocess
import sys
import time
import warnings

import pytest

import seawall
from seawall import Bulkhead, CircuitBreaker, CountWindow, Retry

import _decorated

SQUARES = [
    _decorated.square_through_breaker,
    _decorated.square_through_bulkhead,
    _decorated.square_through_retry,
    _decorated.square_through_rate_limiter,
    _decorated.square_through_policy,
]


@pytest.mark.parametrize("fn", SQUARES, ids=lambda f: f.__name__)
def test_a_decorated_module_level_function_pickles_by_name(fn):
    again = pickle.loads(pickle.dumps(fn))
    assert again is fn
    assert again(7) == 49


def test_a_process_pool_maps_decorated_functions():
    ctx = multiprocessing.get_context("spawn")  # the child finds them by import, not by fork
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as pool:
        for fn in SQUARES:
            assert list(pool.map(fn, [1, 2, 3])) == [1, 4, 9]


def test_a_decorated_local_function_is_refused_by_pickle():
    @CircuitBreaker()
    def local(x):
        return x

    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(local)


@pytest.mark.parametrize(
    "decorator",
    [CircuitBreaker(), Bulkhead(2), Retry(), lambda f: Bulkhead(2)(priority="high")(f), seawall.RateLimiter(10)],
    ids=["breaker", "bulkhead", "retry", "bulkhead(priority)", "rate limiter"],
)
@pytest.mark.parametrize("kind", [staticmethod, classmethod])
def test_a_method_descriptor_is_refused_at_decoration(decorator, kind):
    def f(*args):
        return args

    with pytest.raises(TypeError, match=f"@{kind.__name__} above"):
        decorator(kind(f))


def test_staticmethod_above_the_breaker_works_and_records_a_success():
    b = CircuitBreaker()

    class Client:
        @staticmethod
        @b
        def get(x):
            return x + 1

    assert Client().get(1) == 2 and Client.get(2) == 3
    assert b.metrics()["totals"]["successes"] == 2


async def _fetch():
    return "body"


@pytest.mark.parametrize(
    "make",
    [
        lambda: CircuitBreaker(window=CountWindow(4), minimum_calls=4),
        lambda: Bulkhead(1),
        lambda: Retry(attempts=3),
        lambda: seawall.wrap(CircuitBreaker(), Retry()),
        lambda: seawall.RateLimiter(10),
    ],
    ids=["breaker", "bulkhead", "retry", "policy", "rate limiter"],
)
def test_a_sync_decorated_callable_returning_a_coroutine_is_refused(make):
    guard = make()
    protected = guard(lambda: _fetch())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the coroutine is closed, never left unawaited
        with pytest.raises(TypeError, match="decorate an `async def`"):
            protected()
    if isinstance(guard, CircuitBreaker):
        t = guard.metrics()["totals"]
        # Nothing ran: neither a success nor a failure of the dependency.
        assert (t["successes"], t["failures"], t["ignored"]) == (0, 0, 1)
    if isinstance(guard, Bulkhead):
        assert guard.active == 0


def test_breaker_call_refuses_a_coroutine_too():
    b = CircuitBreaker()
    with pytest.raises(TypeError, match="decorate an `async def`"):
        b.call(lambda: _fetch())
    assert b.metrics()["totals"]["successes"] == 0


def test_an_async_def_still_works():
    b = CircuitBreaker()
    assert asyncio.run(b(_fetch)()) == "body"
    assert b.metrics()["totals"]["successes"] == 1


def test_a_sync_call_past_the_policy_timeout_says_it_overran():
    policy = seawall.wrap(CircuitBreaker(), 0.02)

    def slow():
        time.sleep(0.05)
        return "late"

    r = policy.execute(slow)
    assert (r.value, r.source, r.overran) == ("late", "primary", True)
    quick = policy.execute(lambda: "soon")
    assert (quick.value, quick.overran) == ("soon", False)


def test_a_collection_while_a_decorated_function_is_made_does_not_crash():
    # A collection on every allocation: one runs while each native wrapper is
    # being made (its instance dict allocated, its fields not yet written). In
    # a child, so a crash is this test's failure, not the end of the run.
    code = (
        "import gc, seawall\n"
        "gc.set_threshold(1)\n"
        "for i in range(200):\n"
        "    junk = [[] for _ in range(i % 4)]  # shifts the collector's count\n"
        "    assert seawall.CircuitBreaker()(lambda: 1)() == 1\n"
        "for i in range(200):\n"
        "    junk = [[] for _ in range(i % 4)]\n"
        "    assert seawall.wrap(seawall.CircuitBreaker(), seawall.Retry())(lambda: 2)() == 2\n"
        "print('made')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "made\n"), done.stderr[-2000:]
