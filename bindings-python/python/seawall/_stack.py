"""Per-thread, per-task stacks of held permits, for ``with obj:`` forms.

``__enter__`` and ``__exit__`` of a shared object cannot pass a permit to each
other through the object (many threads and tasks use it at once), so each
object keeps a :class:`contextvars.ContextVar`: every thread, and every asyncio
task, sees its own stack. (Generators interleaved by hand in one thread share a
context: hold the permit objects yourself there, e.g. ``breaker.acquire()``.)
"""

from __future__ import annotations

import contextvars
from typing import Any, Generic, Optional, Tuple, TypeVar

T = TypeVar("T")


class HeldStack(Generic[T]):
    __slots__ = ("_var",)

    def __init__(self, label: str) -> None:
        self._var: contextvars.ContextVar[Optional[Tuple[Any, Any]]] = contextvars.ContextVar(
            f"seawall-{label}", default=None
        )

    def push(self, item: T) -> None:
        self._var.set((item, self._var.get()))

    def pop(self) -> T:
        node = self._var.get()
        if node is None:
            raise RuntimeError("__exit__ without a matching __enter__ in this thread or task")
        item, parent = node
        self._var.set(parent)
        return item  # type: ignore[no-any-return]
