"""Calling the listeners of a policy (``on_*`` hooks): the one rule for every
policy, DESIGN §1 — a listener that raises an ``Exception`` is logged (logger
``seawall``) and changes nothing: not the call's result, its outcome, nor the
other listeners. ``KeyboardInterrupt`` / ``SystemExit`` are the user's own:
every listener still hears the event, then the first is raised."""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional, Sequence, Tuple, TypeVar

__all__ = ["tell", "checked", "without"]

log = logging.getLogger("seawall")

L = TypeVar("L", bound=Callable[..., Any])


def checked(listener: L) -> L:
    """``listener`` if it is callable, else a ``TypeError``."""
    if not callable(listener):
        raise TypeError(f"listener must be callable, got {listener!r}")
    return listener


def without(listeners: Tuple[L, ...], listener: Any) -> Tuple[L, ...]:
    """``listeners`` without ``listener`` (compared by identity)."""
    return tuple(x for x in listeners if x is not listener)


def tell(listeners: Sequence[Callable[..., Any]], args: Tuple[Any, ...], what: str) -> None:
    """Call each listener with ``args``; ``what`` names them in the log."""
    interrupt: Optional[BaseException] = None
    for listener in listeners:
        try:
            listener(*args)
        except Exception:  # noqa: BLE001 - a listener must not change the call
            log.exception("seawall: %s listener %r failed", what, listener)
        except BaseException as exc:
            if interrupt is None:
                interrupt = exc
    if interrupt is not None:
        raise interrupt
