"""What the decorators need to know about the callables they wrap, and how they
hold something (a permit) across the whole life of an async generator."""

from __future__ import annotations

import inspect
import types
from typing import TYPE_CHECKING, Any, AsyncGenerator, Awaitable, Callable, Optional, TypeVar

if TYPE_CHECKING:
    from typing_extensions import TypeGuard

T = TypeVar("T")

_DONE: Any = object()


def is_async_callable(fn: Any) -> TypeGuard[Callable[..., Awaitable[Any]]]:
    """``async def`` functions, partials of them, and objects whose ``__call__`` is
    ``async def``: calling them makes a coroutine, which the decorator must await
    inside its protection (wrapping only the call would protect nothing)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def refuse_method_descriptor(fn: Any, who: str) -> None:
    """``@staticmethod`` / ``@classmethod`` objects are descriptors, not the
    function: wrapped from above, the wrapper would be bound as a method
    (``self`` passed to a static method) and fail at every call. Refuse at
    decoration, saying which order works."""
    if isinstance(fn, (staticmethod, classmethod)):
        kind = type(fn).__name__
        raise TypeError(
            f"{who} cannot decorate a {kind} object: put @{kind} above the {who} decorator "
            f"(@{kind} first, then the {who} on the function)"
        )


def refuse_coroutine(value: Any) -> Any:
    """``value`` unless it is a coroutine, which a sync-decorated callable
    returns when it is really async: protecting its creation would protect
    nothing, so it is closed (no "never awaited" warning) and refused, as the
    native wrappers do."""
    if type(value) is types.CoroutineType:
        value.close()
        raise TypeError(
            "a function decorated as sync returned a coroutine: the protection would end before "
            "its body runs; decorate an `async def` function (or call `.call()` with one) instead"
        )
    return value


async def _step(aw: Awaitable[Any]) -> Any:
    try:
        return await aw
    except StopAsyncIteration:
        return _DONE


def guard_async_gen(
    fn: Callable[..., AsyncGenerator[Any, Any]],
    start: Callable[[], Awaitable[T]],
    finish: Callable[[T, Optional[BaseException]], None],
) -> Callable[..., AsyncGenerator[Any, Any]]:
    """Wrap the async generator function ``fn``: ``await start()`` before its first
    step, then ``finish(token, None)`` once it is exhausted, or ``finish(token,
    exc)`` when it raises or is closed (``exc`` raised on). Exactly one ``finish``
    per ``start``. Values, ``asend``, ``athrow`` and ``aclose`` go through to the
    generator (async generators have no ``yield from``)."""

    async def wrapper(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        token = await start()
        try:
            agen = fn(*args, **kwargs)
            item = await _step(agen.__anext__())
            while item is not _DONE:
                try:
                    sent = yield item
                except GeneratorExit:
                    await agen.aclose()
                    raise
                except BaseException as thrown:  # thrown into this generator: pass it on
                    item = await _step(agen.athrow(thrown))
                else:
                    item = await _step(agen.asend(sent))
        except BaseException as exc:
            finish(token, exc)
            raise
        finish(token, None)

    return wrapper
