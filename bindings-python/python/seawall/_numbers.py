"""Numeric settings as the user wrote them, checked before they reach the
native module: ``bool`` is an ``int`` subclass, so ``True`` would silently be
1 (1 %, 1 s), and an ``int`` beyond 64 bits would surface as a bare
``OverflowError`` naming no field. Both are a
:class:`~seawall.SeawallConfigError` naming the keyword argument; what is not a
number at all stays a ``TypeError``. Ranges are the native side's to check
(it names the field too)."""

from __future__ import annotations

import datetime
from typing import Any, Optional, TypeVar

__all__ = ["real", "whole", "seed", "duration", "opt"]

T = TypeVar("T")

_I64 = 2**63
_U64 = 2**64


def _config_error(field: str, message: str) -> Exception:
    from ._errors import SeawallConfigError

    return SeawallConfigError(f"invalid {field}: {message}", field)


def real(value: Any, field: str) -> float:
    """A number (``int`` or ``float``, not ``bool``) as a ``float``."""
    if isinstance(value, bool):
        raise _config_error(field, f"must be a number, got a bool ({value})")
    if not isinstance(value, (int, float)):
        raise TypeError(f"{field} must be a number, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise _config_error(field, f"{value} is too large for a float") from None


def duration(value: Any, field: str) -> float:
    """Seconds as a number or a :class:`datetime.timedelta`, as a ``float``."""
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    return real(value, field)


def whole(value: Any, field: str) -> int:
    """A whole number (``int``, not ``bool``) that fits a signed 64-bit word."""
    if isinstance(value, bool):
        raise _config_error(field, f"must be a whole number, got a bool ({value})")
    if not isinstance(value, int):
        raise TypeError(f"{field} must be a whole number, got {value!r}")
    if not -_I64 <= value < _I64:
        raise _config_error(field, f"must be a whole number that fits in 64 bits, got {value}")
    return int(value)


def seed(value: Any, field: str) -> int:
    """A random seed: a whole number ``0 <= seed < 2**64``."""
    if isinstance(value, bool) or not isinstance(value, int):
        whole(value, field)  # raises the bool or type error
    if not 0 <= value < _U64:
        raise _config_error(field, f"must be a whole number between 0 and 2**64 - 1, got {value}")
    return int(value)


def opt(check: Any, value: Optional[T], field: str) -> Any:
    """``check(value, field)``, with ``None`` (a rule turned off) passed through."""
    return None if value is None else check(value, field)
