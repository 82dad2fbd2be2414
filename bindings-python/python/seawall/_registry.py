"""Every live named seawall object, for :mod:`seawall.prometheus` (weakly held:
registering keeps nothing alive)."""

from __future__ import annotations

import threading
import weakref
from typing import Any, List

_lock = threading.Lock()
_objects: "weakref.WeakSet[Any]" = weakref.WeakSet()


def register(obj: Any) -> None:
    with _lock:
        _objects.add(obj)


def live() -> List[Any]:
    with _lock:
        return list(_objects)
