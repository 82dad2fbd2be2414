"""Every live named seawall object, for :mod:`seawall.prometheus` and
:mod:`seawall.otel` (weakly held: registering keeps nothing alive), and how both
group the objects they export."""

from __future__ import annotations

import threading
import weakref
from typing import Any, Dict, List, Optional, Tuple

_lock = threading.Lock()
_objects: "weakref.WeakSet[Any]" = weakref.WeakSet()


def register(obj: Any) -> None:
    with _lock:
        _objects.add(obj)


def live() -> List[Any]:
    with _lock:
        return list(_objects)


def label(obj: Any) -> str:
    """The name an exporter shows: the object's own, else one unique to it."""
    name: Optional[str] = obj.name
    return name if name is not None else f"{type(obj).__name__.lower()}-{id(obj):x}"


def groups(objs: List[Any], kinds: Tuple[type, ...]) -> Dict[Tuple[type, str], List[Any]]:
    """The distinct objects by (kind, label), in first-seen order: live objects of
    one kind that share a name are exported as one set of series."""
    out: Dict[Tuple[type, str], List[Any]] = {}
    seen = set()
    for o in objs:
        if id(o) in seen:
            continue
        seen.add(id(o))
        kind = next(k for k in kinds if isinstance(o, k))
        out.setdefault((kind, label(o)), []).append(o)
    return out


def once_per_region(group: List[Any]) -> List[Any]:
    """Every local object, and one handle of each shared region (what lives in a
    region is counted once, however many handles this process has on it)."""
    out, regions = [], set()
    for o in group:
        region: Optional[str] = getattr(o, "_region", None)
        if region is not None:
            if region in regions:
                continue
            regions.add(region)
        out.append(o)
    return out
