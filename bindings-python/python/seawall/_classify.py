"""Exception classification (DESIGN §1) for ``record_on=`` / ``ignore_on=``.

A *spec* is an exception type, a tuple or list of types, or a predicate
``(exception) -> bool``. Anything that is not an :class:`Exception` (the
caller's own cancellation: ``asyncio.CancelledError``, ``KeyboardInterrupt``,
``SystemExit``, ``GeneratorExit``) is always ignored and re-raised unchanged;
the native layer decides that before any spec is consulted.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Tuple, Type, Union, cast

from ._numbers import config_error

ExceptionSpec = Union[
    Type[BaseException],
    Tuple[Type[BaseException], ...],
    List[Type[BaseException]],
    Callable[[BaseException], bool],
]

SUCCESS, FAILURE, IGNORED = 0, 1, 2


def matcher(spec: Optional[ExceptionSpec], what: str) -> Optional[Callable[[BaseException], bool]]:
    """A predicate for ``spec``; ``None`` for ``None``. Anything that is neither
    exception types nor a callable is a :class:`~seawall.SeawallConfigError`
    naming ``what`` (the keyword argument)."""
    if spec is None:
        return None
    if isinstance(spec, type) and issubclass(spec, BaseException):
        cls = spec
        return lambda e: isinstance(e, cls)
    if isinstance(spec, (tuple, list)):
        types = tuple(spec)
        for t in types:
            if not (isinstance(t, type) and issubclass(t, BaseException)):
                raise config_error(what, f"{t!r} is not an exception type")
        return lambda e: isinstance(e, types)
    if callable(spec):
        pred = cast(Callable[[BaseException], object], spec)
        return lambda e: bool(pred(e))
    raise config_error(what, f"must be exception types or a predicate, got {spec!r}")


def classifier(
    record_on: Optional[ExceptionSpec], ignore_on: Optional[ExceptionSpec]
) -> Optional[Callable[[BaseException], int]]:
    """The breaker's rule as ``exc -> 0 (success) | 1 (failure) | 2 (ignored)``,
    or ``None`` for the default (every ``Exception`` is a failure).

    Like resilience4j: ``ignore_on`` wins over ``record_on``, and when
    ``record_on`` is given, an exception it does not match counts as a success
    (the dependency answered; the error is the caller's business)."""
    if record_on is None and ignore_on is None:
        return None
    record = matcher(record_on, "record_on") or (lambda e: True)
    ignore = matcher(ignore_on, "ignore_on")

    def classify(exc: BaseException) -> int:
        if ignore is not None and ignore(exc):
            return IGNORED
        return FAILURE if record(exc) else SUCCESS

    return classify
