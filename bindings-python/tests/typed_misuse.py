"""Must be rejected by `mypy --strict` (test_typing.py checks each error)."""

from seawall import Bulkhead, CircuitBreaker, Retry

CircuitBreaker(minimum_calls="ten")  # error: arg-type
Retry(attempts=3, backoff="0.1 s")  # error: arg-type
Bulkhead(2).acquire(timeout="soon").release()  # error: arg-type
x: int = CircuitBreaker().state  # error: assignment
