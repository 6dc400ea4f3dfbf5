"""The pytest plugin: `pytest --tui-eval` makes each eval case a test item; without the flag it does nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

# Here rather than in a conftest: pytest refuses `pytest_plugins` in a conftest below the rootdir.
pytest_plugins = ["pytester"]

DEMO = Path(__file__).resolve().parents[2] / "demo_agents"
# Loaded explicitly: the entry point may be absent (not reinstalled) or point at another checkout, and
# with plugin autoloading off it cannot be registered twice.
PLUGIN = ("-p", "tui_eval.pytest_plugin", "-p", "no:cacheprovider")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A user's project: the hello_world demo agent with its eval set and test_config.json."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "auto")  # no key in tests: the demo's offline policy
    shutil.copytree(DEMO / "hello_world", pytester.path / "dice_agent",
                    ignore=shutil.ignore_patterns("__pycache__", ".adk"))
    return pytester


def test_each_case_is_an_item_passing_and_failing(project: pytest.Pytester) -> None:
    result = project.runpytest(*PLUGIN, "--tui-eval", "-v")
    result.assert_outcomes(passed=4, failed=5)
    result.stdout.fnmatch_lines([
        "*hello_world.evalset.json::greeting PASSED*",
        "*hello_world.evalset.json::check_then_roll FAILED*",
    ])
    text = result.stdout.str()
    # The failing item shows why: the metric verdict, the trajectory and the responses, turn by turn.
    assert "hello_world / check_then_roll (" in text
    assert "tool_trajectory_avg_score: 0.000 < 1 FAILED" in text
    assert "expected tools:    check_prime" in text
    assert "actual tools:      roll_die" in text
    assert "expected response:" in text and "actual response:" in text


def test_selected_items_only(project: pytest.Pytester) -> None:
    result = project.runpytest(*PLUGIN, "--tui-eval", "-k", "greeting or check_then_roll")
    result.assert_outcomes(passed=1, failed=1, deselected=7)


def test_without_the_flag_nothing_is_collected(project: pytest.Pytester) -> None:
    result = project.runpytest(*PLUGIN)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(["collected 0 items*"])


def test_agent_and_config_from_the_ini_file(project: pytest.Pytester) -> None:
    evals = project.path / "evals"
    evals.mkdir()
    shutil.move(project.path / "dice_agent" / "hello_world.evalset.json", evals / "dice.evalset.json")
    (evals / "lenient.json").write_text('{"criteria": {"response_match_score": 0.0}}')
    project.makeini("[pytest]\ntui_eval_agent = dice_agent\ntui_eval_config = evals/lenient.json\n")
    result = project.runpytest(*PLUGIN, "--tui-eval")
    result.assert_outcomes(passed=9)


def test_not_evaluated_reasons_fail_strict_items(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "auto")
    shutil.copytree(DEMO / "support", pytester.path / "support", ignore=shutil.ignore_patterns("__pycache__", ".adk"))
    target = "support/support.evalset.json::return_used_item"
    pytester.runpytest(*PLUGIN, "--tui-eval", target).assert_outcomes(passed=1)
    result = pytester.runpytest(*PLUGIN, "--tui-eval", "--tui-eval-strict", target)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*hallucinations_v1: not evaluated (no judge credentials)*"])


def test_a_case_with_no_verdict_is_skipped_not_failed_unless_strict(pytester: pytest.Pytester,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """As the CLI's exit 3 and JUnit's skipped: offline, the scenario cases have no verdict at all."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("TUI_EVAL_AGENT_MODE", "auto")
    shutil.copytree(DEMO / "support", pytester.path / "support", ignore=shutil.ignore_patterns("__pycache__", ".adk"))
    target = "support/scenarios/support_scenarios.evalset.json"
    result = pytester.runpytest(*PLUGIN, "--tui-eval", "-rs", "--tui-eval-agent", "support", target)
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*not evaluated: no judge credentials*"])
    result = pytester.runpytest(*PLUGIN, "--tui-eval", "--tui-eval-strict", "--tui-eval-agent", "support", target)
    result.assert_outcomes(failed=2)


def test_a_broken_eval_file_is_a_collection_error(project: pytest.Pytester) -> None:
    (project.path / "dice_agent" / "broken.evalset.json").write_text('{"eval_set_id": "b", "eval_cases": [')
    result = project.runpytest(*PLUGIN, "--tui-eval", "--continue-on-collection-errors")
    result.assert_outcomes(passed=4, failed=5, errors=1)
    result.stdout.fnmatch_lines(["*broken.evalset.json:1:37: invalid JSON*"])


def test_inactive_plugin_imports_nothing_of_the_engine(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed, the plugin loads in every pytest run (ours too, whose fixtures hold eval files)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_light="""
        import sys

        def test_light():
            assert "tui_eval.pytest_plugin" in sys.modules
            assert not [m for m in sys.modules if m.startswith(("tui_eval.engine", "tui_eval.schema"))]
    """)
    (pytester.path / "x.evalset.json").write_text('{"eval_set_id": "x", "eval_cases": []}')
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(passed=1)
