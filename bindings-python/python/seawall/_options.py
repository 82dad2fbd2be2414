"""The Python package's option tables: for each configurable class, which
keyword argument sets which fields of the core configuration (names as
``seawall._native.config_fields()`` gives them, from ``seawall_host::options``),
and which keyword arguments configure the Python wrapper only. A core field no
keyword sets is listed with the reason. ``tests/test_options.py`` checks these
tables against the core's fields and against the classes' signatures, so adding
a core option fails until it is placed here (and in the class)."""

from __future__ import annotations

from typing import Dict, FrozenSet, Mapping, Tuple

#: The core fields each keyword argument sets, per configuration kind.
CORE_OPTIONS: Mapping[str, Mapping[str, Tuple[str, ...]]] = {
    "breaker": {
        "window": ("window.count.size", "window.time.buckets", "window.time.bucket_width_ns"),
        "minimum_calls": ("minimum_calls",),
        "failure_rate_threshold": ("failure_rate_threshold",),
        "slow_call_rate_threshold": ("slow_call_rate_threshold",),
        "slow_call_duration": ("slow_call_duration_ns",),
        "consecutive_failures": ("consecutive_failures",),
        "open_duration": ("open_duration_ns",),
        "open_backoff_multiplier": ("open_backoff_multiplier",),
        "max_open_duration": ("max_open_duration_ns",),
        "open_jitter_factor": ("open_jitter_factor",),
        "half_open_max_calls": ("half_open_max_calls",),
        "half_open_success_threshold": ("half_open_success_threshold",),
        "half_open_max_wait": ("half_open_max_wait_ns",),
        "jitter_seed": ("jitter_seed",),
    },
    "semaphore": {
        "max_concurrent": ("max_concurrent",),
        "max_queue": ("max_queue",),
        "shares": ("shares.critical", "shares.high", "shares.normal", "shares.low"),
    },
    "retry_budget": {
        "ttl": ("ttl_ns",),
        "min_retries_per_sec": ("min_retries_per_sec",),
        "percent_can_retry": ("percent_can_retry",),
    },
    "retry_throttle": {
        "max_tokens": ("max_milli_tokens",),
        "token_ratio": ("token_ratio_milli",),
    },
    "health": {
        "buckets": ("buckets",),
        "bucket_width": ("bucket_width_ns",),
        "degraded_error_rate": ("degraded_error_rate",),
        "unhealthy_error_rate": ("unhealthy_error_rate",),
        "degraded_p99": ("degraded_p99_ns",),
        "unhealthy_p99": ("unhealthy_p99_ns",),
    },
}

#: Keyword arguments that configure the Python wrapper, not a core field.
WRAPPER_OPTIONS: Mapping[str, FrozenSet[str]] = {
    "breaker": frozenset(
        {
            "name",
            "record_on",
            "ignore_on",
            "listeners",
            "shared",
            "clock",
            "failure_on_result",
            "initial_state",
            # The shared region's permit table size, a region option, not a core field.
            "permit_slots",
        }
    ),
    "semaphore": frozenset({"queue_timeout", "priority", "name", "shared", "_poll_only", "_poll_interval"}),
    "retry_budget": frozenset({"name", "shared", "clock"}),
    "retry_throttle": frozenset({"name", "shared"}),
    "health": frozenset({"clock"}),
}

#: Core fields no keyword argument sets, and why.
NOT_OPTIONS: Mapping[str, Dict[str, str]] = {
    "breaker": {},
    "semaphore": {},
    "retry_budget": {},
    "retry_throttle": {},
    "health": {},
}
