"""pytest plugin: with `pytest --tui-eval`, each case of every `*.evalset.json` / `*.test.json` is a test.

Registered as a `pytest11` entry point, so it is loaded by every pytest run in an environment where
tui-eval is installed: without `--tui-eval` it collects nothing and imports nothing of the engine.
When active, one engine run per eval file (only the cases pytest selected) is shared by that file's
items; a failing item shows the failing metrics and the per-turn details `--print-detailed-results`
prints (responses, tool calls, the trajectory verdict, judge and not-evaluated reasons).

Options (command line, or the ini keys in brackets): `--tui-eval-agent` [tui_eval_agent] names the
agent (default: the agent folder around each eval file), `--tui-eval-config` [tui_eval_config] an
EvalConfig for every file (default: test_config.json beside each), `--tui-eval-strict`
[tui_eval_strict] fails a passed case whose metrics were not all evaluated (it goes into the run's
options, as the CLI's --strict does), `--tui-eval-mock-tools strict|fallback` [tui_eval_mock_tools]
answers tool calls from the recorded responses (`--mock-tools`). A case not evaluated at all (no metric
gave a verdict) is skipped with the reason, as the CLI's exit 3 and JUnit's `skipped` say; with
strict it fails.
"""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from .engine.runner import RunRecord
    from .schema.results import CaseResult, EvalSetResult

# The same suffixes as tui_eval.schema.load.EVAL_FILE_SUFFIXES, spelt here so an inactive plugin
# imports nothing of the engine.
EVAL_SUFFIXES = (".evalset.json", ".test.json")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tui-eval", "tui-eval: eval files as tests")
    group.addoption("--tui-eval", action="store_true", dest="tui_eval",
                    help="collect *.evalset.json and *.test.json files, one test per eval case")
    group.addoption("--tui-eval-agent", dest="tui_eval_agent", metavar="AGENT",
                    help="agent folder or replay:PATH (default: the agent folder around each eval file)")
    group.addoption("--tui-eval-config", dest="tui_eval_config", metavar="PATH",
                    help="EvalConfig JSON for every eval file (default: test_config.json beside each)")
    group.addoption("--tui-eval-strict", action="store_true", dest="tui_eval_strict", default=None,
                    help="a case with a metric that was not evaluated fails")
    group.addoption("--tui-eval-mock-tools", dest="tui_eval_mock_tools", choices=("strict", "fallback"),
                    default=None, help="answer tool calls from the cases' recorded tool_responses: strict (an "
                    "unrecorded call fails the turn) or fallback (it runs the real tool)")
    parser.addini("tui_eval_agent", "agent folder (relative to the ini file) for --tui-eval", default=None)
    parser.addini("tui_eval_config", "EvalConfig JSON (relative to the ini file) for --tui-eval", default=None)
    parser.addini("tui_eval_strict", "a metric not evaluated fails its case", type="bool", default=False)
    parser.addini("tui_eval_mock_tools", "strict or fallback: answer tool calls from the recorded responses",
                  default=None)


def _setting(config: pytest.Config, name: str) -> str | None:
    """A path option: from the command line as given, else from the ini file relative to it."""
    value = config.getoption(name)
    if value:
        return str(value)
    ini = config.getini(name)
    if not ini:
        return None
    text = str(ini)
    base = config.inipath.parent if config.inipath else config.rootpath
    prefix = "replay:" if text.startswith("replay:") else ""
    return prefix + str(base / text.removeprefix(prefix))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> EvalFile | None:
    if not parent.config.getoption("tui_eval") or not file_path.name.endswith(EVAL_SUFFIXES):
        return None
    return EvalFile.from_parent(parent, path=file_path)


class EvalCaseFailed(Exception):
    """An eval case did not pass; the message is the text pytest shows."""


class EvalFile(pytest.File):
    """One eval file: its cases are the items; the first item to run runs the file's selected cases."""

    _outcome: RunRecord | BaseException | None = None

    def collect(self) -> Iterator[EvalCaseItem]:
        from .engine.plan import PlanError, plan_run

        try:
            plan = plan_run([str(self.path)], config_path=_setting(self.config, "tui_eval_config"))
        except PlanError as exc:
            raise self.CollectError(str(exc)) from None
        for case in plan.targets[0].cases:
            yield EvalCaseItem.from_parent(self, name=case.eval_id)

    def outcome(self) -> RunRecord | BaseException:
        """The run of this file's selected items, made once (a setup error is kept and re-raised)."""
        if self._outcome is None:
            self._outcome = self._run()
        return self._outcome

    def _run(self) -> RunRecord | BaseException:
        from .api import SetupError, check_mock_tools, execute, prepare_run, run_sync
        from .engine.options import RunOptions

        wanted = [i.name for i in self.session.items if isinstance(i, EvalCaseItem) and i.parent is self]
        try:
            prepared = prepare_run(_setting(self.config, "tui_eval_agent"), [str(self.path)],
                                   config_path=_setting(self.config, "tui_eval_config"))
        except SetupError as exc:
            return exc
        # Only what pytest selected (-k, node ids) runs; an id list needs no `:` syntax, so any id works.
        target = prepared.plan.targets[0]
        target.case_ids = wanted or None
        mock_tools = self.config.getoption("tui_eval_mock_tools") or self.config.getini("tui_eval_mock_tools") or None
        try:
            # --tui-eval-strict goes into the run, as the CLI's --strict does: the same recorded statuses.
            options = RunOptions(save=False, strict=_strict(self.config),
                                 mock_tools=check_mock_tools(str(mock_tools)) if mock_tools is not None else None)
        except SetupError as exc:
            return exc
        return run_sync(execute(prepared, options))


class EvalCaseItem(pytest.Item):
    """One eval case of an eval file."""

    parent: EvalFile

    def runtest(self) -> None:
        from .api import failures_of
        from .schema.status import EvalStatus

        outcome = self.parent.outcome()
        if isinstance(outcome, BaseException):
            raise outcome
        found = _find_case(outcome, self.name)
        if found is None:
            raise EvalCaseFailed(f"eval case {self.name} produced no result (the run was cancelled?)")
        result, case = found
        if case.status == EvalStatus.NOT_EVALUATED:
            # Incomplete, not failed (the CLI's exit 3, JUnit's skipped): no verdict to fail on. A strict
            # run (--tui-eval-strict) has already recorded such a case as failed.
            pytest.skip(f"not evaluated: {_not_evaluated_reason(case)}")
        blocks = failures_of(_only(outcome, result, case))
        if blocks:
            raise EvalCaseFailed(_failure_text(outcome, result, case, blocks))

    def repr_failure(self, excinfo: ExceptionInfo[BaseException], style: str | None = None) -> str | TerminalRepr:
        from .api import SetupError

        if isinstance(excinfo.value, EvalCaseFailed | SetupError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"eval case {self.name}"


def _strict(config: pytest.Config) -> bool:
    strict = config.getoption("tui_eval_strict")
    if strict is None:
        strict = config.getini("tui_eval_strict")
    return bool(strict)


def _not_evaluated_reason(case: CaseResult) -> str:
    from .schema.status import EvalStatus

    reasons = [m.reason or "no reason given" for m in case.metrics if m.status == EvalStatus.NOT_EVALUATED]
    return "; ".join(dict.fromkeys(r.split("\n", 1)[0] for r in reasons)) or "no metric gave a verdict"


def _find_case(record: RunRecord, eval_id: str) -> tuple[EvalSetResult, CaseResult] | None:
    for result in record.results:
        for case in result.case_results:
            if case.eval_id == eval_id:
                return result, case
    return None


def _only(record: RunRecord, result: EvalSetResult, case: CaseResult) -> RunRecord:
    """A shallow copy of the record holding just this case, for the report's whole-record functions."""
    one_result = result.model_copy(update={"case_results": [case]})
    one = copy.copy(record)
    one.results = [one_result]
    one.cancelled = False
    return one


def _failure_text(record: RunRecord, result: EvalSetResult, case: CaseResult, blocks: list[str]) -> str:
    from .report import print_detailed

    out = io.StringIO()
    print_detailed(_only(record, result, case), out)
    return "\n".join(blocks) + "\n\n" + out.getvalue().rstrip("\n")
