"""Seconds (Python's ``float``) to the core's ``u64`` nanoseconds: the one place
the package converts a duration, so no caller can overflow the native side.

Configuration (:func:`to_ns`) refuses what is not a duration — a negative,
NaN or infinite number is a :class:`~seawall.SeawallConfigError` (a
``ValueError``) naming the field, as the native ``secs_to_ns`` does — and
saturates a finite duration longer than ``2**64 - 1`` ns (about 584 years) at
that value instead of overflowing. A server's hint (:func:`hint_to_ns`, e.g.
HTTP Retry-After) is not configuration: what makes no sense as a wait is no
hint, and an endless one saturates.
"""

from __future__ import annotations

import datetime
import math
from typing import Any, Optional, Union

__all__ = ["NS_MAX", "Seconds", "to_ns", "hint_to_ns"]

#: A duration as every seawall keyword takes it: seconds as a number, or a
#: :class:`datetime.timedelta`.
Seconds = Union[float, datetime.timedelta]

#: The largest duration the core represents (``u64::MAX`` nanoseconds).
NS_MAX = 2**64 - 1
_NS_MAX_FLOAT = 2.0**64  # first float past NS_MAX (NS_MAX itself is not a float)


def _saturating_ns(seconds: float) -> int:
    """``seconds`` (finite, >= 0) to nanoseconds, rounded to nearest, at most
    :data:`NS_MAX`; an ``int`` is converted exactly (no float overflow)."""
    if isinstance(seconds, int):
        return min(seconds * 1_000_000_000, NS_MAX)
    ns = seconds * 1e9
    if ns >= _NS_MAX_FLOAT:  # also catches 1e300 * 1e9 == inf
        return NS_MAX
    return int(round(ns))


def to_ns(seconds: Seconds, field: str) -> int:
    """A configured duration in seconds → whole nanoseconds, saturating at
    :data:`NS_MAX`. Not a number, negative, NaN or infinite:
    :class:`~seawall.SeawallConfigError` naming ``field``."""
    if isinstance(seconds, datetime.timedelta):
        seconds = seconds.total_seconds()
    if isinstance(seconds, bool):
        from ._errors import SeawallConfigError

        raise SeawallConfigError(f"invalid {field}: must be a number of seconds, got a bool ({seconds})", field)
    if not isinstance(seconds, (int, float)):
        from ._errors import SeawallConfigError

        raise SeawallConfigError(f"invalid {field}: must be a number of seconds, got {seconds!r}", field)
    if not (seconds >= 0 and seconds != math.inf):
        from ._errors import SeawallConfigError

        raise SeawallConfigError(
            f"invalid {field}: must be a finite number of seconds >= 0, got {seconds}", field
        )
    return _saturating_ns(seconds)


def hint_to_ns(value: Any) -> Optional[int]:
    """A server's wait hint (seconds as ``int``/``float``, or a ``timedelta``)
    → nanoseconds, or ``None`` for no hint: ``None``, zero, negative, NaN and
    anything that is not a number are no hint (the backoff alone applies);
    ``inf`` and anything longer than :data:`NS_MAX` saturate at it."""
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not value > 0:  # zero, negative, NaN
        return None
    if value == math.inf:
        return NS_MAX
    return _saturating_ns(value)
