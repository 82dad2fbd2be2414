"""The package's option tables (seawall/_options.py) against the core's
configuration fields (seawall_host::options, through _native.config_fields())
and against the signatures of the classes users call: a core field no keyword
sets, a keyword no table names, or a table entry for a field the core does not
have, each fails here."""

import ast
import inspect
import os

import pytest

import seawall
from seawall import _native, _options

# The classes whose keyword arguments set each configuration kind.
CLASSES = {
    "breaker": seawall.CircuitBreaker,
    "semaphore": seawall.Bulkhead,
    "retry_budget": seawall.RetryBudget,
    "retry_throttle": seawall.RetryThrottle,
    "health": seawall.Health,
}


def stub_keywords(cls):
    # A native class has no signature inspect can read on every Python this
    # package supports, so its keywords come from its `__new__` in the stubs,
    # which stubtest checks against the module.
    path = os.path.join(os.path.dirname(seawall.__file__), "_native.pyi")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "__new__":
                    a = fn.args
                    return {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} - {"cls"}
    raise AssertionError(f"no __new__ for {cls.__name__} in the stubs")


def keyword_names(cls):
    if cls.__module__ == "seawall._native":
        return stub_keywords(cls)
    sig = inspect.signature(cls)
    return {
        p.name
        for p in sig.parameters.values()
        if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    }


def test_every_kind_has_a_table():
    kinds = [kind for kind, _ in _native.config_fields()]
    assert kinds == ["breaker", "semaphore", "retry_budget", "retry_throttle", "health"]
    assert set(_options.CORE_OPTIONS) == set(kinds) == set(CLASSES)


@pytest.mark.parametrize("kind,fields", _native.config_fields())
def test_table_covers_the_core_fields_once(kind, fields):
    placed = [f for core in _options.CORE_OPTIONS[kind].values() for f in core]
    placed += list(_options.NOT_OPTIONS[kind])
    assert sorted(placed) == sorted(fields), f"{kind}: option table and core fields differ"


@pytest.mark.parametrize("kind", sorted(CLASSES))
def test_table_names_every_keyword(kind):
    declared = set(_options.CORE_OPTIONS[kind]) | _options.WRAPPER_OPTIONS[kind]
    assert keyword_names(CLASSES[kind]) == declared


def test_breaker_fields_as_the_core_declares_them():
    # Written from seawall-core's BreakerConfig, not from the function under test.
    fields = dict(_native.config_fields())["breaker"]
    assert "window.time.bucket_width_ns" in fields and "jitter_seed" in fields
    assert len(fields) == 16


def test_stale_cache_default_is_1024_entries():
    # The documented default, the same in Node (lib/pipeline.js).
    assert _native.STALE_CACHE_MAX_ENTRIES == 1024
    cache = seawall.StaleCache()
    assert cache._cache.maxsize == 1024
