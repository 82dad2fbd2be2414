"""Module-level functions decorated by each sync form, for test_decorating.py:
a process pool imports this module by name to find them again."""

import seawall

breaker = seawall.CircuitBreaker(name="decorated-module")
bulkhead = seawall.Bulkhead(4)
limiter = seawall.RateLimiter(1000, burst=1000)
retry = seawall.Retry(attempts=2, backoff=seawall.Backoff(base=0.001, jitter="none"))


@breaker
def square_through_breaker(x):
    return x * x


@bulkhead
def square_through_bulkhead(x):
    return x * x


@retry
def square_through_retry(x):
    return x * x


@limiter
def square_through_rate_limiter(x):
    return x * x


@seawall.wrap(breaker, bulkhead, retry)
def square_through_policy(x):
    return x * x
