"""`mypy --strict` accepts a typed use of the API and rejects misuse; stubtest
finds the hand-kept stubs of the native module faithful to the built module."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def mypy(*args):
    pytest.importorskip("mypy")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *args],
        cwd=HERE, capture_output=True, text=True,
    )


def test_mypy_strict_accepts_typed_usage():
    r = mypy("typed_usage.py")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_strict_rejects_misuse():
    r = mypy("typed_misuse.py")
    assert r.returncode == 1
    errors = [line for line in r.stdout.splitlines() if ": error:" in line]
    assert [(e.split(":")[1], e.rsplit("[", 1)[-1].rstrip("]")) for e in errors] == [
        ("5", "arg-type"), ("6", "arg-type"), ("7", "arg-type"), ("8", "assignment"),
    ], r.stdout


def test_mypy_strict_accepts_the_package_itself():
    r = mypy("-p", "seawall")
    assert r.returncode == 0, r.stdout + r.stderr


def test_stubtest_on_the_native_stubs():
    pytest.importorskip("mypy")
    r = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "seawall", "--allowlist", os.path.join(HERE, "stubtest-allowlist.txt")],
        cwd=HERE, capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
