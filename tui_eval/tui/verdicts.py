"""Turn results into Content: metric lines, trajectory rows, hallucination labels, rubric verdicts, votes.

Pure functions over result records (tolerant of missing keys: judge metrics evolve), so the widgets stay
thin and the rendering is testable without an app.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from textual.content import Content

from .text import STATUS_GLYPH, STATUS_STYLE, call_signature, fmt_score, fmt_value, literal, plain

if TYPE_CHECKING:  # pragma: no cover
    from ..schema.model import EvalCase, FunctionCall, Invocation
    from ..schema.results import CaseResult, InvocationMetricResult, MetricResult

TRAJECTORY = "tool_trajectory_avg_score"
HALLUCINATIONS = "hallucinations_v1"
RUBRIC_METRICS = ("rubric_based_final_response_quality_v1", "rubric_based_tool_use_quality_v1")
MATCH_TYPES = ("EXACT", "IN_ORDER", "ANY_ORDER")

LABEL_STYLE = {
    "supported": "$text-success on $success-muted",
    "unsupported": "$text-warning on $warning-muted",
    "contradictory": "$text-error on $error-muted",
    "disputed": "$text-secondary on $secondary-muted",
    "not_applicable": "$text-muted",
}
STEP_STYLE = {
    "matched": "$text-success",
    "missing": "$text-error",
    "extra": "$text-warning",
    "out_of_order": "$text-accent",
    "args": "$text-error",
}
STEP_GLYPH = {"matched": "✔", "missing": "✘", "extra": "+", "out_of_order": "↕", "args": "≠"}
STEP_WORD = {"matched": "", "missing": "missing ", "extra": "extra ", "out_of_order": "out of order ", "args": "other args "}


def status_chip(status: int | None) -> Content:
    if status is None:
        return Content.styled("·", "$text-muted")
    return Content.styled(STATUS_GLYPH[int(status)], STATUS_STYLE[int(status)])


def votes_text(votes: Any) -> str | None:
    """`4/5` from {"yes": 4, "no": 1}, {"valid": 4, "invalid": 1} or a list of sample verdicts."""
    positive = ("yes", "valid", "safe", "true", "pass", "passed", "supported", "1")
    if isinstance(votes, dict):
        counts = {str(k).lower(): v for k, v in votes.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if not counts:
            return None
        total = int(sum(counts.values()))
        yes = int(sum(v for k, v in counts.items() if k in positive))
        return f"{yes}/{total}"
    if isinstance(votes, (list, tuple)) and votes:
        def is_yes(v: Any) -> bool:
            if isinstance(v, dict):
                v = v.get("verdict", v.get("label", v.get("score")))
            return str(v).strip().lower() in positive or v is True or v == 1

        return f"{sum(1 for v in votes if is_yes(v))}/{len(votes)}"
    return None


def _votes_of(details: dict[str, Any]) -> str | None:
    for key in ("votes", "samples", "verdicts"):
        if key in details:
            text = votes_text(details[key])
            if text:
                return text
    return None


# ---- metric summaries -----------------------------------------------------------------------------


def metric_line(m: MetricResult) -> Content:
    """`✘ tool_trajectory_avg_score 0.50 / 1.00`."""
    return Content.assemble(
        status_chip(int(m.status)), " ", literal(m.metric_name), " ",
        (f"{fmt_score(m.score)} / {m.threshold:g}", "$text-muted"),
    )


def case_metric_lines(result: CaseResult) -> list[Content]:
    lines: list[Content] = []
    for m in result.metrics:
        lines.append(metric_line(m))
        if m.reason:
            lines.append(plain(f"    {m.reason}", "$text-warning"))
    if result.error:
        lines.append(plain(f"agent error: {result.error}", "$text-error"))
    return lines


def turn_metric_lines(result: CaseResult, index: int) -> list[Content]:
    lines: list[Content] = []
    for m in result.metrics:
        inv = m.per_invocation[index] if index < len(m.per_invocation) else None
        if inv is None:
            lines.append(Content.assemble(status_chip(int(m.status)), " ", literal(m.metric_name),
                                          (" (case level)", "$text-muted")))
            continue
        extra = _votes_of(inv.details)
        lines.append(Content.assemble(
            status_chip(int(inv.status)), " ", literal(m.metric_name), " ",
            (f"{fmt_score(inv.score)} / {m.threshold:g}", "$text-muted"),
            (f"  votes {extra}", "$text-muted") if extra else "",
        ))
        if inv.reason:
            lines.append(plain(f"    {inv.reason}", "$text-warning"))
    return lines


def not_evaluated_lines(result: CaseResult, index: int) -> list[Content]:
    """Why metrics did not score this turn: judge errors and NOT_EVALUATED reasons, one line each."""
    lines: list[Content] = []
    for m in result.metrics:
        inv = m.per_invocation[index] if index < len(m.per_invocation) else None
        status = int(inv.status) if inv is not None else int(m.status)
        # A failed metric's reason explains the failure (shown with the metric); only missing scores go here.
        reason = ((inv.reason if inv is not None else None) or m.reason) if status == 3 else None
        if status == 3:
            lines.append(Content.assemble(status_chip(status), " ", (literal(m.metric_name), "bold"), ": ",
                                          plain(reason or "not evaluated", "$text-warning")))
        details = inv.details if inv is not None else {}
        for err in _as_list(details.get("errors")) + _as_list(details.get("judge_errors")):
            lines.append(Content.assemble("  ", (literal(m.metric_name), "bold"), ": ", plain(err, "$text-error")))
        dropped = details.get("dropped_samples", details.get("dropped"))
        if isinstance(dropped, int) and dropped:
            lines.append(plain(f"  {m.metric_name}: {dropped} judge sample(s) dropped (unparseable)", "$text-muted"))
    return lines


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def invocation_result(result: CaseResult, metric: str, index: int) -> InvocationMetricResult | None:
    m = result.metric(metric)
    if m is None or index >= len(m.per_invocation):
        return None
    return m.per_invocation[index]


# ---- trajectory -----------------------------------------------------------------------------------


@dataclass(slots=True)
class TrajectoryRow:
    """One row of the side-by-side trajectory: an expected call, an actual call, or both."""

    expected: Content | None
    actual: Content | None


def _step_content(kind: str, call: FunctionCall | None, name: str, width: int) -> Content:
    sig = call_signature(call.name, call.args, width) if call is not None else literal(name)
    return Content.assemble((f"{STEP_GLYPH[kind]} {STEP_WORD[kind]}", STEP_STYLE[kind]), sig)


def _kind(step: dict[str, Any]) -> str:
    status = str(step.get("status", "matched"))
    if step.get("arg_diffs") and status in ("missing", "extra"):
        return "args"
    return status if status in STEP_GLYPH else "extra"


def trajectory_rows(
    alignment: dict[str, Any],
    expected: list[FunctionCall],
    actual: list[FunctionCall],
    width: int = 200,
) -> list[TrajectoryRow]:
    """Pair expected and actual calls as the alignment says; unpaired calls get a row of their own."""
    exp_steps = list(alignment.get("expected") or [])
    act_steps = list(alignment.get("actual") or [])
    rows: list[tuple[int | None, int | None]] = []
    placed: set[int] = set()
    for a in act_steps:
        j = a.get("expected_index")
        if isinstance(j, int) and j not in placed:
            placed.add(j)
            rows.append((j, a.get("index")))
        else:
            rows.append((None, a.get("index")))
    for e in exp_steps:
        j = e.get("index")
        if not isinstance(j, int) or j in placed:
            continue
        at = 0
        for pos, (ej, _ai) in enumerate(rows):
            if ej is not None and ej < j:
                at = pos + 1
        rows.insert(at, (j, None))
        placed.add(j)
    exp_by = {e.get("index"): e for e in exp_steps}
    act_by = {a.get("index"): a for a in act_steps}
    out = []
    for j, i in rows:
        left = right = None
        if j is not None:
            step = exp_by.get(j, {})
            call = expected[j] if 0 <= j < len(expected) else None
            left = _step_content(_kind(step), call, str(step.get("name", "?")), width)
        if i is not None:
            step = act_by.get(i, {})
            call = actual[i] if isinstance(i, int) and 0 <= i < len(actual) else None
            right = _step_content(_kind(step), call, str(step.get("name", "?")), width)
        out.append(TrajectoryRow(left, right))
    return out


def arg_diff_lines(alignment: dict[str, Any]) -> list[Content]:
    """`book_flight  date: "5 May" → "6 May"` for every argument-level difference."""
    lines: list[Content] = []
    for step in alignment.get("expected") or []:
        for diff in step.get("arg_diffs") or []:
            path = diff.get("path") or "(all args)"
            kind = diff.get("kind", "changed")
            if kind == "missing":
                change = Content.assemble(("missing", "$text-error"), f", expected {fmt_value(diff.get('expected'), 60)}")
            elif kind == "extra":
                change = Content.assemble(("extra", "$text-warning"), f": {fmt_value(diff.get('actual'), 60)}")
            else:
                change = Content.assemble(
                    (fmt_value(diff.get("expected"), 60), "$text-error"), " → ",
                    (fmt_value(diff.get("actual"), 60), "$text-success"),
                )
            lines.append(Content.assemble("≠ ", (literal(step.get("name", "?")), "bold"), " ",
                                          (literal(path), "$text-accent"), " ", change))
    return lines


def alignment_summary(alignment: dict[str, Any]) -> str:
    """`1 matched, 1 with other args, 1 extra`: the alignment in one line."""
    counts = {"matched": 0, "args": 0, "missing": 0, "extra": 0, "out_of_order": 0}
    for e in alignment.get("expected") or []:
        if e.get("status") == "missing" and not e.get("arg_diffs"):
            counts["missing"] += 1
    for a in alignment.get("actual") or []:
        kind = _kind(a)
        if kind in counts:
            counts[kind] += 1
    words = {"args": "with other args", "out_of_order": "out of order"}
    return ", ".join(f"{n} {words.get(k, k)}" for k, n in counts.items() if n) or "no tool calls"


def compute_alignments(expected: list[FunctionCall], actual: list[FunctionCall], ignore_args: bool) -> dict[str, dict[str, Any]]:
    """How EXACT, IN_ORDER and ANY_ORDER would each judge these calls ({} if the metric module is absent)."""
    try:
        from ..metrics.alignment import align_all_match_types
    except ImportError:
        return {}
    return {name: a.to_dict() for name, a in align_all_match_types(expected, actual, ignore_args).items()}


def configured_match_type(result: CaseResult | None, stored: dict[str, Any] | None) -> tuple[str, bool]:
    """The match type and ignore_args the trajectory metric ran with."""
    if stored and stored.get("match_type"):
        return str(stored["match_type"]).upper(), bool(stored.get("ignore_args", False))
    metric = result.metric(TRAJECTORY) if result is not None else None
    crit = metric.criterion if metric is not None else {}
    raw = crit.get("match_type", "EXACT") if isinstance(crit, dict) else "EXACT"
    try:
        from ..schema.config import MatchType

        name = MatchType.parse(raw).name
    except ValueError:
        name = "EXACT"
    return name, bool(crit.get("ignore_args", False)) if isinstance(crit, dict) else False


# ---- hallucinations -------------------------------------------------------------------------------


def sentences_of(details: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for s in details.get("sentences") or []:
        if isinstance(s, dict) and isinstance(s.get("text"), str):
            out.append(s)
    return out


def _is_final(source: Any) -> bool:
    return source in (None, "", "final", "final_response", "response")


def _label_style(label: Any) -> str:
    return LABEL_STYLE.get(str(label).lower(), "$text-muted") if label else "$text-muted"


def labelled_text(text: str, sentences: list[tuple[int, dict[str, Any]]], selected: int | None) -> tuple[Content, list[int]]:
    """A checked response with each sentence styled by its label (the selected one reversed).

    `sentences` pairs each sentence's global index with its record; uses the judge's `span` when given,
    else finds the text scanning forward. Returns the indexes of sentences it could not place.
    """
    body = literal(text)
    content = Content(body)
    unplaced: list[int] = []
    pos = 0
    for i, s in sentences:
        span = s.get("span")
        if isinstance(span, (list, tuple)) and len(span) == 2 and 0 <= span[0] <= span[1] <= len(body):
            at, end = int(span[0]), int(span[1])
        else:
            needle = literal(s.get("text", "")).strip()
            at = body.find(needle, pos) if needle else -1
            if at < 0:
                unplaced.append(i)
                continue
            end = at + len(needle)
        style = _label_style(s.get("label"))
        if i == selected:
            style = f"{style} reverse bold"
        content = content.stylize(style, at, end)
        pos = end
    return content, unplaced


def hallucination_blocks(details: dict[str, Any], final_text: str, selected: int | None) -> list[Content]:
    """Each checked response (the final one, and intermediate ones when configured) with inline labels."""
    sentences = sentences_of(details)
    steps = [st for st in details.get("steps") or [] if isinstance(st, dict)]
    if not steps:
        steps = [{"source": "final", "text": final_text}]
    blocks: list[Content] = []
    placed: set[int] = set()
    for k, step in enumerate(steps):
        mine = [(i, s) for i, s in enumerate(sentences) if s.get("step", 0) == k]
        if not mine and len(steps) > 1:
            continue
        source = step.get("source")
        if _is_final(source):
            heading = "final response"
        else:
            heading = f"{source or 'intermediate'} response" + (f" ({step['author']})" if step.get("author") else "")
        text = step.get("text") if isinstance(step.get("text"), str) else final_text
        body, unplaced = labelled_text(text, mine, selected)
        placed.update(i for i, _s in mine if i not in unplaced)
        blocks.append(Content.styled(literal(heading), "$text-muted"))
        blocks.append(body)
    rest = [i for i in range(len(sentences)) if i not in placed]
    if rest:
        blocks.append(Content.styled("sentences not found in the text:", "$text-muted"))
        blocks.extend(sentence_line(i, sentences[i], i == selected) for i in rest)
    return blocks


def sentence_line(i: int, s: dict[str, Any], selected: bool) -> Content:
    label = str(s.get("label") or "unlabelled").lower()
    mark = "▶ " if selected else "  "
    source = "" if _is_final(s.get("source")) else f" [{s.get('source')}]"
    return Content.assemble(
        mark, (f"{label}", _label_style(s.get("label"))), (literal(source), "$text-muted"), " ",
        plain(_preview(s.get("text", ""))),
    )


def _preview(text: Any, width: int = 70) -> str:
    one = " ".join(literal(text).split())
    return one if len(one) <= width else one[: width - 1] + "…"


def sentence_detail(i: int, total: int, s: dict[str, Any]) -> list[Content]:
    """Label, rationale and excerpt of the selected sentence."""
    label = str(s.get("label") or "unlabelled (no majority)").lower()
    votes = s.get("votes")
    vote_text = ", ".join(f"{k} {v}" for k, v in votes.items()) if isinstance(votes, dict) and votes else ""
    lines = [Content.assemble((f"sentence {i + 1}/{total} ", "bold"), (label, _label_style(s.get("label"))),
                              (f"  votes: {vote_text}" if vote_text else "", "$text-muted"))]
    lines.append(plain(s.get("text", "")))
    if s.get("rationale"):
        lines.append(Content.assemble(("rationale: ", "$text-muted"), plain(s["rationale"])))
    if s.get("supporting_excerpt") or s.get("contradicting_excerpt"):
        if s.get("supporting_excerpt"):
            lines.append(Content.assemble(("supporting excerpt: ", "$text-muted"), plain(s["supporting_excerpt"], "italic")))
        if s.get("contradicting_excerpt"):
            lines.append(Content.assemble(("contradicting excerpt: ", "$text-muted"), plain(s["contradicting_excerpt"], "italic")))
    elif s.get("excerpt"):
        lines.append(Content.assemble(("excerpt: ", "$text-muted"), plain(s["excerpt"], "italic")))
    if s.get("source") and not _is_final(s.get("source")):
        lines.append(Content.assemble(("source: ", "$text-muted"), plain(s["source"])))
    return lines


def legend() -> Content:
    parts: list[Any] = [("labels: ", "$text-muted")]
    for label, style in LABEL_STYLE.items():
        parts.extend([(label, style), " "])
    return Content.assemble(*parts)


# ---- rubrics --------------------------------------------------------------------------------------


def rubric_texts(result: CaseResult, case: EvalCase | None, inv: Invocation | None, metric: MetricResult) -> dict[str, str]:
    """rubric_id -> its text, from the criterion, the case and the invocation."""
    out: dict[str, str] = {}
    crit = metric.criterion if isinstance(metric.criterion, dict) else {}
    for r in crit.get("rubrics") or []:
        if isinstance(r, dict):
            rid = r.get("rubric_id") or r.get("rubricId")
            content = r.get("rubric_content") or r.get("rubricContent") or {}
            text = content.get("text_property") or content.get("textProperty") if isinstance(content, dict) else None
            if rid and text:
                out[str(rid)] = str(text)
    for rubric in [*(case.rubrics or [] if case is not None else []), *(inv.rubrics or [] if inv is not None else [])]:
        if rubric.rubric_content.text_property:
            out.setdefault(rubric.rubric_id, rubric.rubric_content.text_property)
    return out


def rubric_lines(details: dict[str, Any], texts: dict[str, str]) -> list[Content]:
    """One verdict per rubric: ✔/✘, the rubric, the sample votes, then the rationale."""
    lines: list[Content] = []
    for r in details.get("rubrics") or details.get("rubric_scores") or []:
        if not isinstance(r, dict):
            continue
        rid = str(r.get("rubric_id", "?"))
        score = r.get("score")
        verdict = r.get("verdict")
        passed = (score is not None and score >= 1) or str(verdict).lower() in ("yes", "true", "pass")
        failed = (score is not None and score < 1) or str(verdict).lower() in ("no", "false", "fail")
        status = 1 if passed else 2 if failed else 3
        votes = votes_text(r.get("votes")) or votes_text(r.get("samples"))
        text = texts.get(rid) or r.get("rubric_text") or r.get("text") or ""
        lines.append(Content.assemble(
            status_chip(status), " ", (literal(rid), "bold"),
            (f"  votes {votes} yes", "$text-muted") if votes else "",
        ))
        if text:
            lines.append(plain(f"    {text}"))
        if r.get("rationale"):
            lines.append(plain(f"    {r['rationale']}", "$text-muted italic"))
    return lines


def vote_lines(metric: str, inv: InvocationMetricResult) -> list[Content]:
    """Sample votes and the first reasoning of a judge metric without rubrics (final_response_match_v2)."""
    lines: list[Content] = []
    votes = _votes_of(inv.details)
    if votes:
        lines.append(Content.assemble(status_chip(int(inv.status)), " ", (literal(metric), "bold"),
                                      (f"  votes {votes}", "$text-muted")))
    details = inv.details
    if details.get("verdict"):
        lines.append(plain(f"    verdict: {details['verdict']}"))
    reasons = _as_list(details.get("rationale")) or [
        s.get("rationale") or s.get("reasoning") for s in details.get("samples") or [] if isinstance(s, dict)]
    for reason in [r for r in reasons if r][:1]:
        lines.append(plain(f"    {reason}", "$text-muted italic"))
    for policy in _as_list(details.get("violated_policies")):
        lines.append(plain(f"    violated policy: {policy}", "$text-error"))
    return lines


def joined(lines: Iterable[Content]) -> Content:
    return Content("\n").join(list(lines))
