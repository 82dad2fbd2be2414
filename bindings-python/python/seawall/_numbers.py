"""Settings as the user wrote them, checked before they reach the native
module, so that every wrong setting is a :class:`~seawall.SeawallConfigError`
naming the keyword argument (as Node's ``EINVALIDCONFIG``), whatever is wrong
with it: ``bool`` is an ``int`` subclass, so ``True`` would silently be 1
(1 %, 1 s); an ``int`` beyond 64 bits would surface as a bare
``OverflowError``; a string or a float where a whole number belongs, or a
number where a function belongs, would be a ``TypeError`` naming nothing.
Ranges are the native side's to check (it names the field too)."""

from __future__ import annotations

import datetime
from typing import Any, Optional, TypeVar

__all__ = ["config_error", "real", "whole", "seed", "duration", "opt", "text", "function", "flag"]

T = TypeVar("T")

_I64 = 2**63
_U64 = 2**64


def config_error(field: str, message: str) -> Exception:
    """``SeawallConfigError("invalid FIELD: MESSAGE", FIELD)``."""
    from ._errors import SeawallConfigError

    return SeawallConfigError(f"invalid {field}: {message}", field)


def real(value: Any, field: str) -> float:
    """A number (``int`` or ``float``, not ``bool``) as a ``float``."""
    if isinstance(value, bool):
        raise config_error(field, f"must be a number, got a bool ({value})")
    if not isinstance(value, (int, float)):
        raise config_error(field, f"must be a number, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise config_error(field, f"{value} is too large for a float") from None


def duration(value: Any, field: str) -> float:
    """Seconds as a number or a :class:`datetime.timedelta`, as a ``float``."""
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    return real(value, field)


def whole(value: Any, field: str) -> int:
    """A whole number (``int``, not ``bool``) that fits a signed 64-bit word."""
    if isinstance(value, bool):
        raise config_error(field, f"must be a whole number, got a bool ({value})")
    if not isinstance(value, int):
        raise config_error(field, f"must be a whole number, got {value!r}")
    if not -_I64 <= value < _I64:
        raise config_error(field, f"must be a whole number that fits in 64 bits, got {value}")
    return int(value)


def seed(value: Any, field: str) -> int:
    """A random seed: a whole number ``0 <= seed < 2**64``."""
    if isinstance(value, bool) or not isinstance(value, int):
        whole(value, field)  # raises the bool or type error
    if not 0 <= value < _U64:
        raise config_error(field, f"must be a whole number between 0 and 2**64 - 1, got {value}")
    return int(value)


def opt(check: Any, value: Optional[T], field: str) -> Any:
    """``check(value, field)``, with ``None`` (a rule turned off) passed through."""
    return None if value is None else check(value, field)


def text(value: Any, field: str) -> str:
    """A string setting (a name, a region, a jitter kind)."""
    if not isinstance(value, str):
        raise config_error(field, f"must be a string, got {value!r}")
    return value


def function(value: Any, field: str) -> Any:
    """A callable setting (a clock, a predicate, a listener)."""
    if not callable(value):
        raise config_error(field, f"must be callable, got {value!r}")
    return value


def flag(value: Any, field: str) -> bool:
    """``True`` or ``False`` (not 0, 1 or ``None``)."""
    if not isinstance(value, bool):
        raise config_error(field, f"must be True or False, got {value!r}")
    return value
