"""People's verdicts: Cohen's κ, a verdict kept in a real run's record and read back, current or stale by
the versions it was given against, and the report's human review section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_run import run_cli
from tests.support.evalfiles import case, turn, write_set
from tui_eval.engine.reviews import (
    agreement_by_metric,
    case_version,
    cohen_kappa,
    find_record,
    is_current,
    keep_verdict,
    reviews_in,
    turns_version,
)
from tui_eval.schema.runrecord import HumanVerdict
from tui_eval.engine.store import load_record
from tui_eval.schema.status import EvalStatus

T, F = True, False


@pytest.mark.parametrize(("pairs", "kappa"), [
    ([(T, T), (T, F), (F, F), (F, F)], 0.5),        # p_o 3/4, p_e 1/2
    ([(T, T), (F, F), (T, T), (F, F)], 1.0),
    ([(T, F), (F, T)], -1.0),
    ([(T, T), (T, F), (T, T)], None),               # one side used a single label
    ([(F, F), (F, F)], None),
    ([], None),
])
def test_cohen_kappa(pairs: list[tuple[bool, bool]], kappa: float | None) -> None:
    got = cohen_kappa(pairs)
    assert got == pytest.approx(kappa) if kappa is not None else got is None


def _run(tmp_path: Path) -> tuple[Path, Path]:
    golden = write_set(tmp_path / "golden.evalset.json", "golden",
                       case("same", turn("hi", "Hello there, how can I help?")),
                       case("other", turn("bye", "Goodbye and thanks for visiting.")))
    recorded = write_set(tmp_path / "recorded.json", "recorded",
                         case("same", turn("hi", "Hello there, how can I help?")),
                         case("other", turn("bye", "Completely unrelated words here.")))
    code, _out, err = run_cli("run", f"replay:{recorded}", str(golden))
    assert code == 1, err
    [record] = (tmp_path / ".adk" / "eval_history").glob("*.tui-eval.json")
    return golden, record


def _verdict(metric: str, label: str, result, reason: str = "") -> HumanVerdict:
    from tui_eval.schema.load import load_eval_set

    return HumanVerdict(metric=metric, verdict=label, reason=reason, at=1.0,
                        case_version=case_version(load_eval_set(result.eval_set_file).case(result.eval_id)),
                        turns_version=turns_version(result.actual))


def test_a_verdict_is_kept_in_the_run_record_and_read_back_with_the_run_s_own(tmp_path: Path) -> None:
    golden, record = _run(tmp_path)
    _meta, result = load_record(record)
    cases = {c.eval_id: c for c in result.case_results}
    history = record.parent
    assert find_record(history, "same", cases["same"].session_id) == record
    said = keep_verdict(record, "same", cases["same"].session_id,
                        _verdict("response_match_score", "fail", cases["same"], "too chatty"))
    assert said is EvalStatus.PASSED
    keep_verdict(record, "other", cases["other"].session_id, _verdict("response_match_score", "fail", cases["other"]))
    # The record still loads as a run record, and keeps the verdicts where the format names them.
    load_record(record)
    raw = json.loads(record.read_text())
    assert [len(c.get("human_verdicts", [])) for c in raw["cases"]] == [1, 1]

    reviews = reviews_in(history)
    assert [(r.eval_id, r.automatic, r.disagrees) for r in reviews] == [
        ("same", EvalStatus.PASSED, True), ("other", EvalStatus.FAILED, False)]
    [agreement] = agreement_by_metric(reviews)
    assert (agreement.metric, agreement.n, agreement.agree, agreement.kappa) == ("response_match_score", 2, 1, None)

    # Current while the case and the judged turns are unchanged; stale once the case changes.
    from tui_eval.schema.load import load_eval_set

    first = reviews[0].verdict
    assert is_current(first, load_eval_set(golden).case("same"), cases["same"].actual)
    golden.write_text(golden.read_text().replace("Hello there, how can I help?", "Hello!"))
    assert not is_current(first, load_eval_set(golden).case("same"), cases["same"].actual)

    code, out, err = run_cli("report", str(record))
    assert code == 0, err
    assert "### Human review" in out
    assert "2 human verdict(s), 1 disagreeing with the run." in out
    assert "| response\\_match\\_score | 2 | 50% | — |" in out
    assert '- same, metric response\\_match\\_score: human fail ("too chatty"), run passed' in out
