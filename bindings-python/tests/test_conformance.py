"""Every conformance scenario of every primitive, through the Python API."""

import pytest

import conformance_runner as runner

FILES = runner.scenario_files(runner.scenario_dirs([]))


def test_scenarios_found() -> None:
    # conformance/cases alone holds scenarios of all seven primitives.
    kinds = set()
    for f in FILES:
        import json

        kinds |= set(json.loads(f.read_text())) & set(runner.PRIMITIVES)
    assert kinds == set(runner.PRIMITIVES)


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.parent.name}/{p.stem}" for p in FILES])
def test_scenario(path) -> None:
    sid, verdict, why = runner.run_file(path)
    assert verdict == "PASS", f"{sid}: {why}"


def test_runner_reports_a_wrong_expectation(tmp_path) -> None:
    # The runner must be able to fail: a scenario expecting the wrong state.
    bad = tmp_path / "breaker-wrong.json"
    bad.write_text(
        '{"name": "x", "breaker": {"window": {"kind": "count", "size": 2}, "minimum_calls": 2},'
        ' "steps": [{"call": "failure"}, {"call": "failure"}, {"expect_state": "closed"}]}'
    )
    sid, verdict, why = runner.run_file(bad)
    assert (sid, verdict) == ("breaker-wrong", "FAIL")
    assert "expected 'closed', got 'open'" in why
