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


def test_a_scenario_that_crashes_fails_alone_and_the_rest_still_run(tmp_path, monkeypatch, capsys):
    # One scenario's crash (here an AttributeError, as a None backoff once
    # raised) is that scenario's FAIL: the scenarios after it still run.
    (tmp_path / "a-crashes.json").write_text(
        '{"name": "a", "backoff": {"base_ms": 1, "jitter": "none"}, "steps": [{"attempt": 1, "expect_delay_ms": 1}]}'
    )
    (tmp_path / "b-passes.json").write_text(
        '{"name": "b", "deadline": {"total_ms": 100}, "steps": [{"at_ms": 0, "expect_remaining_ms": 100}]}'
    )

    def crash(_sc):
        return None.delay_ns  # type: ignore[attr-defined]

    monkeypatch.setitem(runner.RUNNERS, "backoff", crash)
    missing = tmp_path / "no-such-folder"
    assert runner.main([str(tmp_path), str(missing), str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    crashed = "FAIL a-crashes: crashed: AttributeError: 'NoneType' object has no attribute 'delay_ns'"
    assert out[0] == crashed
    assert out[1] == "PASS b-passes"
    assert out[2].startswith(f"FAIL {missing}: cannot read the scenario folder: ")
    assert out[3:] == [crashed, "PASS b-passes", "2 passed, 3 failed, 0 skipped"]
