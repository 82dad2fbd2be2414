import os
import sys

# The conformance runner and the multiprocess workers live next to the tests.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


class FakeClock:
    """Monotonic seconds that only move when a test says so."""

    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt
