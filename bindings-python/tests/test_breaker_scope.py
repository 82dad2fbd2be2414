"""``with breaker:``: the native per-thread path (no event loop running) and
the per-task path (inside a running loop), both pairing each ``__exit__``
with its own ``__enter__``'s permit."""

import asyncio
import threading

import pytest

from seawall import CircuitBreaker, CountWindow
from conftest import FakeClock


def totals(b):
    t = b.metrics()["totals"]
    return t["successes"], t["failures"], t["ignored"]


def test_nested_blocks_of_two_breakers_record_their_own_outcomes():
    a, b = CircuitBreaker(), CircuitBreaker()
    with a:
        with pytest.raises(ValueError):
            with b:
                raise ValueError("b fails")
    assert totals(a) == (1, 0, 0)
    assert totals(b) == (0, 1, 0)


def test_the_duration_is_the_blocks_own():
    clock = FakeClock()
    b = CircuitBreaker(window=CountWindow(4), minimum_calls=4, slow_call_duration=1.0, clock=clock)
    with b:
        with b:
            clock.advance(0.5)  # the inner block: 0.5 s, not slow
        clock.advance(1.0)  # the outer one: 1.5 s, slow
    assert b.metrics()["totals"]["slow"] == 1
    assert b.metrics()["window"]["slow_calls"] == 1


def test_an_ignored_exception_and_cancellation_are_classified_as_before():
    b = CircuitBreaker(ignore_on=KeyError)
    with pytest.raises(KeyError):
        with b:
            raise KeyError("x")
    with pytest.raises(KeyboardInterrupt):
        with b:
            raise KeyboardInterrupt
    assert totals(b) == (0, 0, 2)


def test_threads_keep_their_own_blocks():
    b = CircuitBreaker()
    inside, leave = threading.Barrier(2), threading.Event()
    errors = []

    def worker():
        try:
            with b:
                inside.wait()
                leave.wait()
                raise RuntimeError("worker fails")
        except RuntimeError:
            pass
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=worker)
    t.start()
    with b:
        inside.wait()
    # This thread's block ended first and was a success: the worker's permit
    # is still held, and its failure is recorded when its own block ends.
    assert totals(b) == (1, 0, 0)
    leave.set()
    t.join()
    assert not errors
    assert totals(b) == (1, 1, 0)


def test_a_sync_with_spanning_an_await_is_paired_per_task():
    clock = FakeClock()
    b = CircuitBreaker(window=CountWindow(4), minimum_calls=4, slow_call_duration=1.0, clock=clock)
    order = []

    async def call(name, fail, hold):
        with b:  # a sync block in async code, with an await inside
            order.append(name)
            await hold.wait()
            if fail:
                raise ValueError(name)

    async def main():
        hold_slow, hold_fast = asyncio.Event(), asyncio.Event()
        slow = asyncio.ensure_future(call("slow-fails", True, hold_slow))
        await asyncio.sleep(0)  # entered at t0
        clock.advance(1.5)
        fast = asyncio.ensure_future(call("fast-succeeds", False, hold_fast))
        await asyncio.sleep(0)  # entered at t0 + 1.5
        hold_fast.set()
        await fast  # entered last, left first, after 0 s
        clock.advance(0.2)
        hold_slow.set()  # leaves after 1.7 s
        with pytest.raises(ValueError):
            await slow

    asyncio.run(main())
    assert order == ["slow-fails", "fast-succeeds"]
    # Each exit recorded its own permit: a success of 0 s and a slow failure of
    # 1.7 s. Swapped, the success would be the slow call (1.5 s) and the
    # failure 0.2 s, not slow.
    m = b.metrics()
    assert totals(b) == (1, 1, 0)
    assert (m["window"]["slow_calls"], m["window"]["slow_failures"]) == (1, 1)


def test_exit_without_enter_is_an_error():
    with pytest.raises(RuntimeError, match="without a matching __enter__"):
        CircuitBreaker().__exit__(None, None, None)


def test_a_block_left_open_by_an_abandoned_generator_gives_its_permit_back():
    b = CircuitBreaker(window=CountWindow(2), minimum_calls=2)

    def gen():
        with b:
            yield 1

    g = gen()
    next(g)
    g.close()  # GeneratorExit runs the block's exit: ignored, not a failure
    assert totals(b) == (0, 0, 1)
    assert b.metrics()["half_open_in_flight"] == 0


def test_a_loop_run_inside_a_native_block_keeps_its_tasks_blocks_apart():
    # The outer block is native (no loop yet); inside it a loop runs two tasks
    # whose blocks interleave. Each exit must pair with its own entry: the
    # task that fails records the failure, the outer block its success.
    clock = FakeClock()
    b = CircuitBreaker(window=CountWindow(8), minimum_calls=8, slow_call_duration=1.0, clock=clock)

    async def call(fail, hold):
        with b:
            await hold.wait()
            if fail:
                raise ValueError("down")

    async def main():
        first, second = asyncio.Event(), asyncio.Event()
        failing = asyncio.ensure_future(call(True, first))
        await asyncio.sleep(0)
        ok = asyncio.ensure_future(call(False, second))
        await asyncio.sleep(0)
        clock.advance(2.0)
        first.set()  # the task entered first leaves first, failing, after 2 s
        with pytest.raises(ValueError):
            await failing
        second.set()
        await ok  # 2 s too

    with b:
        asyncio.run(main())
        clock.advance(1.0)
    # Outer: a success of 3 s (slow); tasks: a slow failure and a slow success.
    m = b.metrics()
    assert totals(b) == (2, 1, 0)
    assert (m["window"]["calls"], m["window"]["slow_calls"], m["window"]["slow_failures"]) == (3, 3, 1)
    # Nothing is left on either stack: a fresh block pairs as usual.
    with pytest.raises(RuntimeError, match="without a matching __enter__"):
        b.__exit__(None, None, None)
