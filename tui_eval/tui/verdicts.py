"""Turn results into Content: metric lines, trajectory rows, hallucination labels, rubric verdicts, votes.

Pure functions over the typed verdict details (`schema.details`): they read fields, never re-run metric
code, and dispatch on the details' type rather than on metric names. The widgets stay thin and the
rendering is testable without an app.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from textual.content import Content

from ..schema.details import (
    MATCH_TYPE_NAMES,
    ActualStep,
    Alignment,
    CheckedResponse,
    ExpectedStep,
    HallucinationDetails,
    JudgeDetails,
    MatchTypeName,
    MetricDetails,
    RubricDetails,
    SafetyDetails,
    SentenceVerdict,
    SimulatorTurnDetails,
    TrajectoryDetails,
)
from ..schema.results import EvalStatus
from .text import call_signature, fmt_score, fmt_value, literal, plain, status_content

if TYPE_CHECKING:  # pragma: no cover
    from ..schema.model import FunctionCall, Invocation
    from ..schema.results import CaseResult, InvocationMetricResult, MetricResult

MATCH_TYPES: tuple[MatchTypeName, ...] = MATCH_TYPE_NAMES

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
STEP_WORD = {"matched": "", "missing": "missing ", "extra": "extra ", "out_of_order": "", "args": "other args "}


def votes_of(details: MetricDetails | None) -> str | None:
    """`4/5`: the positive sample votes of a sampled judge verdict, None for other details."""
    if isinstance(details, (JudgeDetails, SimulatorTurnDetails)) and details.votes.total:
        return details.votes.text
    return None


def errors_of(details: MetricDetails | None) -> list[str]:
    """Judge errors kept in the details (dropped samples, failed segmentation)."""
    if isinstance(details, (JudgeDetails, RubricDetails, HallucinationDetails, SimulatorTurnDetails)):
        return list(details.errors)
    return []


def dropped_of(details: MetricDetails | None) -> int:
    if isinstance(details, (JudgeDetails, RubricDetails, HallucinationDetails, SimulatorTurnDetails)):
        return details.dropped_samples
    return 0


# ---- metric summaries -----------------------------------------------------------------------------


def score_text(m: MetricResult, score: float | None, status: EvalStatus) -> str:
    """`0.50 / 1` against the threshold; an informational metric's value alone: `812 informational`."""
    if status == EvalStatus.INFORMATIONAL:
        return f"{'n/a' if score is None else format(score, '.4g')} informational"
    return f"{fmt_score(score)} / {m.threshold:g}"


def metric_line(m: MetricResult, verdict: MetricResult | InvocationMetricResult | None = None) -> Content:
    """The dashboard's verdict line of a metric on a case (or on one turn: `verdict`), compact beside the
    text reports' (`share.metric_line`): `✘ tool_trajectory_avg_score 0.50 / 1` (`ℹ token_usage_v1 812
    informational`)."""
    v = m if verdict is None else verdict
    return Content.assemble(
        status_content(v.status), " ", literal(m.metric_name), " ", (score_text(m, v.score, v.status), "$text-muted"),
    )


def _with_reason(line: Content, reason: str | None) -> list[Content]:
    """A verdict line, and its reason under it when it has one."""
    return [line, plain(f"    {reason}", "$text-warning")] if reason else [line]


def evaluated_note(result: CaseResult) -> str | None:
    """`1 of 4 metrics evaluated` for a case that passed with metrics not evaluated, else None.

    ADK's status rule passes a case when nothing failed, so a pass can rest on one metric of four; the
    badge says so, in the same words as the CLI, JUnit and history (`CaseResult.coverage_text`)."""
    if result.status != EvalStatus.PASSED:
        return None
    return result.coverage_text()


def case_metric_lines(result: CaseResult, marked: str | None = None) -> list[Content]:
    """A line per metric (and its reason); `marked`, the metric the tree's number comes from, ends in ◂."""
    lines: list[Content] = []
    for m in result.metrics:
        line = metric_line(m)
        lines += _with_reason(line + Content.styled(" ◂", "bold $text-accent") if m.metric_name == marked else line,
                              m.reason)
    if result.error:
        lines.append(plain(f"agent error: {result.error}", "$text-error"))
    return lines


def turn_metric_lines(result: CaseResult, index: int) -> list[Content]:
    lines: list[Content] = []
    for m in result.metrics:
        inv = m.turn(index)
        if inv is None:
            lines.append(Content.assemble(status_content(m.status), " ", literal(m.metric_name),
                                          (" (case level)", "$text-muted")))
            continue
        votes = votes_of(inv.details)
        line = metric_line(m, inv)
        lines += _with_reason(line + Content.styled(f"  votes {votes}", "$text-muted") if votes else line, inv.reason)
    return lines


def not_evaluated_lines(result: CaseResult, index: int) -> list[Content]:
    """Why metrics did not score this turn: judge errors and NOT_EVALUATED reasons, one line each."""
    lines: list[Content] = []
    for m in result.metrics:
        inv = m.turn(index)
        status = inv.status if inv is not None else m.status
        # A failed metric's reason explains the failure (shown with the metric); only missing scores go here.
        not_evaluated = status == EvalStatus.NOT_EVALUATED
        reason = ((inv.reason if inv is not None else None) or m.reason) if not_evaluated else None
        if not_evaluated:
            lines.append(Content.assemble(status_content(status), " ", (literal(m.metric_name), "bold"), ": ",
                                          plain(reason or status.label, "$text-warning")))
        details = inv.details if inv is not None else None
        for err in errors_of(details):
            lines.append(Content.assemble("  ", (literal(m.metric_name), "bold"), ": ", plain(err, "$text-error")))
        dropped = dropped_of(details)
        # Errors already name each dropped sample; the count only adds news when they were not listed.
        if dropped and not errors_of(details):
            lines.append(plain(f"  {m.metric_name}: {dropped} judge sample(s) dropped (unparseable)", "$text-muted"))
    return lines


def details_of(result: CaseResult, index: int, kind: type[Any] | tuple[type[Any], ...]) -> list[tuple[MetricResult, InvocationMetricResult]]:
    """Every metric whose verdict on turn `index` carries details of type `kind`, in the case's order."""
    return [(m, inv) for m in result.metrics if (inv := m.turn(index)) is not None and isinstance(inv.details, kind)]


def invocation_result(result: CaseResult, metric: str, index: int) -> InvocationMetricResult | None:
    m = result.metric(metric)
    return m.turn(index) if m is not None else None


# ---- trajectory -----------------------------------------------------------------------------------


@dataclass(slots=True)
class TrajectoryRow:
    """One row of the side-by-side trajectory: an expected call, an actual call, or both."""

    expected: Content | None
    actual: Content | None


def short_signature(call: FunctionCall, room: int, keep: set[str] | frozenset[str] = frozenset()) -> str:
    """`name(key=value, …)` in at most `room` characters when it can be: arguments in `keep` (those that
    differ) are kept, others give way to `…` from the end; a lone long value is cut last."""
    full = call_signature(call.name or "", call.args, 200)
    if len(full) <= room or not isinstance(call.args, dict) or not call.args:
        return full if len(full) <= room or room < 12 else full[: room - 2] + "…)"
    items = list(call.args.items())
    shown = [True] * len(items)

    def build() -> str:
        parts: list[str] = []
        for (k, v), on in zip(items, shown):
            if on:
                parts.append(f"{literal(k)}={fmt_value(v, 60)}")
            elif not parts or parts[-1] != "…":
                parts.append("…")
        return f"{literal(call.name or '')}({', '.join(parts)})"

    for i in reversed(range(len(items))):  # equal arguments go first, from the end
        if len(build()) <= room:
            break
        if items[i][0] not in keep:
            shown[i] = False
    text = build()
    return text if len(text) <= room or room < 12 else text[: room - 2] + "…)"


def _step_content(kind: str, call: FunctionCall | None, name: str, width: int, note: str = "",
                  keep: set[str] | frozenset[str] = frozenset()) -> Content:
    word = STEP_WORD[kind]
    room = width - len(STEP_GLYPH[kind]) - 1 - len(word) - (len(note) + 1 if note else 0)
    # Shortened to its cell, never wrapped mid-call: the arguments that differ stay.
    sig = short_signature(call, room, keep) if call is not None else literal(name)
    if call is not None and word and sig != call_signature(call.name or "", call.args, 200):
        # Tight: the glyph says it (≠ other args, ✘ missing, + extra), the room goes to the call.
        word = ""
        sig = short_signature(call, room + len(STEP_WORD[kind]), keep)
    return Content.assemble((f"{STEP_GLYPH[kind]} {word}", STEP_STYLE[kind]), sig,
                            (f" {note}", STEP_STYLE[kind]) if note else "")


def _kind(step: ExpectedStep | ActualStep) -> str:
    status = step["status"]
    if step.get("arg_diffs") and status in ("missing", "extra"):
        return "args"
    return status


def moved_pairs(alignment: Alignment) -> dict[int, int]:
    """expected index -> actual index of each expected call the agent made at another place (ADK's
    verdict counts it once, as out of order: never also as missing)."""
    act_by = {a["index"]: a for a in alignment["actual"]}
    out: dict[int, int] = {}
    for e in alignment["expected"]:
        i = e["actual_index"]
        if e["status"] == "missing" and i is not None and i in act_by and act_by[i]["status"] == "out_of_order":
            out[e["index"]] = i
    return out


def _in_line(pairs: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """The heaviest subset of (expected, actual, weight) pairs in the same order on both sides: the
    pairs that can share a row while each column keeps its own order."""
    pairs = sorted(pairs)
    best: list[int] = []
    prev: list[int] = []
    for k, (_j, i, w) in enumerate(pairs):
        best.append(w)
        prev.append(-1)
        for q in range(k):
            if pairs[q][1] < i and best[q] + w > best[k]:
                best[k], prev[k] = best[q] + w, q
    if not pairs:
        return []
    k = max(range(len(pairs)), key=best.__getitem__)
    chain: list[tuple[int, int]] = []
    while k >= 0:
        chain.append((pairs[k][0], pairs[k][1]))
        k = prev[k]
    return chain[::-1]


def trajectory_rows(
    alignment: Alignment,
    expected: list[FunctionCall],
    actual: list[FunctionCall],
    width: int = 200,
) -> list[TrajectoryRow]:
    """The expected calls in the eval file's order beside the actual calls in the agent's order.

    Paired calls share a row where both orders allow it (matched calls first); a call whose partner sits
    on another row says where it is: `book_hotel() moved from 2 to 1` (out of order), `(actual 2)`."""
    exp_steps = alignment["expected"]
    act_steps = alignment["actual"]
    exp_by = {e["index"]: e for e in exp_steps}
    act_by = {a["index"]: a for a in act_steps}
    # Every expected call with its actual partner: matched, out of order, or the same tool with other args.
    partners = [(e["index"], e["actual_index"], 3 if e["status"] == "matched" else 1)
                for e in exp_steps if e["actual_index"] is not None and e["actual_index"] in act_by]
    anchors = _in_line(partners)
    rows: list[tuple[int | None, int | None]] = []
    j = i = 0
    n, m = len(exp_steps), len(act_steps)
    for aj, ai in [*anchors, (n, m)]:
        # Calls between two shared rows: the expected ones, then the actual ones, each in its order.
        rows.extend((k, None) for k in range(j, aj))
        rows.extend((None, k) for k in range(i, ai))
        if aj < n and ai < m:
            rows.append((aj, ai))
        j, i = aj + 1, ai + 1
    shared = set(anchors)
    return [TrajectoryRow(None if rj is None else _cell(exp_by[rj], expected, "expected", shared, width),
                          None if ri is None else _cell(act_by[ri], actual, "actual", shared, width))
            for rj, ri in rows]


def _cell(step: ExpectedStep | ActualStep, calls: list[FunctionCall], side: str,
          shared: set[tuple[int, int]], width: int) -> Content:
    """One call of one column, with where its partner is when that is not on the same row."""
    k = step["index"]
    call = calls[k] if 0 <= k < len(calls) else None
    partner: int | None
    if side == "expected":
        partner = step.get("actual_index")  # type: ignore[assignment]
        on_row = partner is not None and (k, partner) in shared
    else:
        partner = step.get("expected_index")  # type: ignore[assignment]
        on_row = partner is not None and (partner, k) in shared
    kind = _kind(step)
    note = ""
    if partner is not None and not on_row:
        if side == "actual" and kind == "out_of_order":
            note = f"moved from {partner + 1} to {k + 1}"
        elif side == "expected" and kind == "missing":
            kind, note = "out_of_order", f"moved to {partner + 1}"
        else:
            note = f"(actual {partner + 1})" if side == "expected" else f"(expected {partner + 1})"
    keep = {str(d["path"]).split(".")[0].split("[")[0] for d in step.get("arg_diffs") or []}
    return _step_content(kind, call, str(step["name"]), width, note, keep)


def arg_diff_lines(alignment: Alignment) -> list[Content]:
    """`book_flight  date: "5 May" → "6 May"` for every argument-level difference."""
    lines: list[Content] = []
    for step in alignment["expected"]:
        for diff in step.get("arg_diffs") or []:
            path = diff["path"] or "(all args)"
            kind = diff["kind"]
            if kind == "missing":
                change = Content.assemble(("missing", "$text-error"), f", expected {fmt_value(diff.get('expected'), 60)}")
            elif kind == "extra":
                change = Content.assemble(("extra", "$text-warning"), f": {fmt_value(diff.get('actual'), 60)}")
            else:
                change = Content.assemble(
                    (fmt_value(diff.get("expected"), 60), "$text-error"), " → ",
                    (fmt_value(diff.get("actual"), 60), "$text-success"),
                )
            lines.append(Content.assemble("≠ ", (literal(step["name"]), "bold"), " ",
                                          (literal(path), "$text-accent"), " ", change))
    return lines


def alignment_summary(alignment: Alignment) -> str:
    """`1 matched, 1 with other args, 1 extra`, or `1 matched, book_hotel moved from 2 to 1`: the
    alignment in one line. A call made at another place counts once, as moved (never also missing)."""
    moved = moved_pairs(alignment)
    counts = {"matched": 0, "args": 0, "missing": 0, "extra": 0, "out_of_order": 0}
    for e in alignment["expected"]:
        if e["status"] == "missing" and not e.get("arg_diffs") and e["index"] not in moved:
            counts["missing"] += 1
    for a in alignment["actual"]:
        counts[_kind(a)] += 1
    words = {"args": "with other args"}
    parts = [f"{n} {words.get(k, k)}" for k, n in counts.items() if n and k != "out_of_order"]
    named = [f"{literal(a['name'])} moved from {j + 1} to {i + 1}" for j, i in sorted(moved.items(), key=lambda p: p[1])
             for a in [next(x for x in alignment["actual"] if x["index"] == i)]]
    unnamed = counts["out_of_order"] - len(named)
    if len(named) > 2:
        parts.extend([*named[:2], f"{len(named) - 2} more moved"])
    else:
        parts.extend(named)
    if unnamed > 0:
        parts.append(f"{unnamed} out of order")
    return ", ".join(parts) or "no tool calls"


def stored_trajectory(result: CaseResult | None, index: int) -> TrajectoryDetails | None:
    """The trajectory details the metric stored for turn `index` (all three match types), if it ran."""
    if result is None:
        return None
    from ..schema.criteria import DEEP_TRAJECTORY as DEEP

    # deep_tool_trajectory_v1 judges the calls inside tool calls: the turn view shows it on its own.
    found = [(m, inv) for m, inv in details_of(result, index, TrajectoryDetails) if m.metric_name != DEEP]
    if not found:
        return None
    details = found[0][1].details
    assert isinstance(details, TrajectoryDetails)
    return details


def configured_match_type(result: CaseResult | None, stored: TrajectoryDetails | None) -> tuple[MatchTypeName, bool]:
    """The match type and ignore_args the trajectory metric ran with (EXACT when it did not run)."""
    if stored is not None:
        return stored.match_type, stored.ignore_args
    if result is not None:
        from ..schema.criteria import DEEP_TRAJECTORY as DEEP

        for m in result.metrics:
            if m.metric_name == DEEP:
                continue
            for inv in m.per_invocation:
                if isinstance(inv.details, TrajectoryDetails):
                    return inv.details.match_type, inv.details.ignore_args
    return "EXACT", False


# ---- hallucinations -------------------------------------------------------------------------------


def _label_style(label: str | None) -> str:
    return LABEL_STYLE.get(label, "$text-muted") if label else "$text-muted"


def labelled_text(text: str, sentences: list[tuple[int, SentenceVerdict]], selected: int | None) -> tuple[Content, list[int]]:
    """A checked response with each sentence styled by its label (the selected one reversed).

    `sentences` pairs each sentence's global index with its verdict; uses the stored `span` when given,
    else finds the text scanning forward. Returns the indexes of sentences it could not place.
    """
    body = literal(text)
    content = Content(body)
    unplaced: list[int] = []
    pos = 0
    for i, s in sentences:
        span = s.span
        if span is not None and 0 <= span[0] <= span[1] <= len(body):
            at, end = span
        else:
            needle = literal(s.text).strip()
            at = body.find(needle, pos) if needle else -1
            if at < 0:
                unplaced.append(i)
                continue
            end = at + len(needle)
        style = _label_style(s.label)
        if i == selected:
            style = f"{style} reverse bold"
        content = content.stylize(style, at, end)
        pos = end
    return content, unplaced


def hallucination_blocks(details: HallucinationDetails, final_text: str, selected: int | None) -> list[Content]:
    """Each checked response (the final one, and intermediate ones when configured) with inline labels."""
    sentences = details.sentences
    steps = list(details.steps) or [CheckedResponse(source="final", text=final_text)]
    blocks: list[Content] = []
    placed: set[int] = set()
    for k, step in enumerate(steps):
        mine = [(i, s) for i, s in enumerate(sentences) if s.step == k]
        if not mine and len(steps) > 1:
            continue
        if step.source == "final":
            heading = "final response"
        else:
            heading = f"{step.source} response" + (f" ({step.author})" if step.author else "")
        body, unplaced = labelled_text(step.text or final_text, mine, selected)
        placed.update(i for i, _s in mine if i not in unplaced)
        blocks.append(Content.styled(literal(heading), "$text-muted"))
        blocks.append(body)
    rest = [i for i in range(len(sentences)) if i not in placed]
    if rest:
        blocks.append(Content.styled("sentences not found in the text:", "$text-muted"))
        blocks.extend(sentence_line(i, sentences[i], i == selected) for i in rest)
    return blocks


def sentence_line(i: int, s: SentenceVerdict, selected: bool) -> Content:
    label = s.label or "unlabelled"
    mark = "▶ " if selected else "  "
    source = "" if s.source == "final" else f" [{s.source}]"
    return Content.assemble(
        mark, (label, _label_style(s.label)), (literal(source), "$text-muted"), " ",
        plain(_preview(s.text)),
    )


def _preview(text: str, width: int = 70) -> str:
    one = " ".join(literal(text).split())
    return one if len(one) <= width else one[: width - 1] + "…"


def sentence_detail(i: int, total: int, s: SentenceVerdict) -> list[Content]:
    """Label, rationale and excerpt of the selected sentence."""
    label = s.label or "unlabelled (no majority)"
    vote_text = ", ".join(f"{k} {v}" for k, v in s.votes.items())
    lines = [Content.assemble((f"sentence {i + 1}/{total} ", "bold"), (label, _label_style(s.label)),
                              (f"  votes: {vote_text}" if vote_text else "", "$text-muted"))]
    lines.append(plain(s.text))
    if s.rationale:
        lines.append(Content.assemble(("rationale: ", "$text-muted"), plain(s.rationale)))
    if s.supporting_excerpt or s.contradicting_excerpt:
        if s.supporting_excerpt:
            lines.append(Content.assemble(("supporting excerpt: ", "$text-muted"), plain(s.supporting_excerpt, "italic")))
        if s.contradicting_excerpt:
            lines.append(Content.assemble(("contradicting excerpt: ", "$text-muted"), plain(s.contradicting_excerpt, "italic")))
    elif s.excerpt:
        lines.append(Content.assemble(("excerpt: ", "$text-muted"), plain(s.excerpt, "italic")))
    if s.source != "final":
        lines.append(Content.assemble(("source: ", "$text-muted"), plain(s.source)))
    return lines


def legend() -> Content:
    parts: list[Any] = [("labels: ", "$text-muted")]
    for label, style in LABEL_STYLE.items():
        parts.extend([(label, style), " "])
    return Content.assemble(*parts)


# ---- rubrics --------------------------------------------------------------------------------------


def rubric_lines(details: RubricDetails) -> list[Content]:
    """One verdict per rubric: ✔/✘, the rubric, the sample votes, then the rationale."""
    lines: list[Content] = []
    for r in details.rubrics:
        status = (EvalStatus.NOT_EVALUATED if r.verdict is None
                  else EvalStatus.PASSED if r.verdict == "yes" else EvalStatus.FAILED)
        votes = r.votes.text if r.votes.total else None
        text = r.text or ""
        lines.append(Content.assemble(
            status_content(status), " ", (literal(r.rubric_id), "bold"),
            (f"  votes {votes} yes", "$text-muted") if votes else "",
        ))
        if text:
            lines.append(plain(f"    {text}"))
        if r.rationale:
            lines.append(plain(f"    {r.rationale}", "$text-muted italic"))
    return lines


def vote_lines(metric: str, inv: InvocationMetricResult) -> list[Content]:
    """Sample votes, the verdict and its reasoning of a judge metric without rubrics
    (final_response_match_v2, safety_v1, the user-simulator quality)."""
    details = inv.details
    if not isinstance(details, (JudgeDetails, SimulatorTurnDetails)):
        return []
    lines: list[Content] = []
    votes = votes_of(details)
    if votes:
        lines.append(Content.assemble(status_content(inv.status), " ", (literal(metric), "bold"),
                                      (f"  votes {votes}", "$text-muted")))
    verdict = details.verdict
    if verdict is not None and not isinstance(details, SimulatorTurnDetails):
        lines.append(plain(f"    verdict: {verdict}"))
    if details.rationale:
        lines.append(plain(f"    {details.rationale}", "$text-muted italic"))
    if isinstance(details, SafetyDetails):
        for policy in details.violated_policies:
            lines.append(plain(f"    violated policy: {policy}", "$text-error"))
    return lines


def joined(lines: Iterable[Content]) -> Content:
    return Content("\n").join(list(lines))


# ---- tool responses and the event trace ----------------------------------------------------------


def _response_for(inv: Invocation, index: int, call: FunctionCall) -> object:
    """The response to a turn's `index`-th call: by call id, else the same-name response in order."""
    responses = inv.tool_responses
    if call.id is not None:
        for r in responses:
            if r.id == call.id:
                return r.response
    same = [r for r in responses if r.name == call.name]
    before = sum(1 for c in inv.tool_calls[:index] if c.name == call.name)
    return same[before].response if before < len(same) else _NO_RESPONSE


_NO_RESPONSE = object()


def tool_response_lines(inv: Invocation | None, width: int = 200) -> list[Content]:
    """`get_balance() → {"balance": 120}`: each call of a turn with what the tool returned."""
    if inv is None:
        return []
    lines: list[Content] = []
    for i, call in enumerate(inv.tool_calls):
        response = _response_for(inv, i, call)
        sig = call_signature(call.name or "", call.args, 60)
        if response is _NO_RESPONSE:
            lines.append(Content.assemble(plain(sig), ("  (no response recorded)", "$text-muted")))
        else:
            lines.append(Content.assemble(plain(sig), (" → ", "$text-muted"), plain(fmt_value(response, width))))
    return lines


def event_trace_lines(inv: Invocation | None, width: int = 200) -> list[Content]:
    """Everything the agent did in a turn, in order: texts (intermediate ones too), transfers, tool calls
    and tool responses, each with its author when the turn recorded events."""
    from ..schema.calls import nested_under
    from ..schema.model import InvocationEvents

    if inv is None:
        return []
    lines: list[Content] = []
    data = inv.intermediate_data
    if isinstance(data, InvocationEvents):
        for event in data.invocation_events:
            author = one_line_text(event.author, 24)
            for part in (event.content.parts or []) if event.content is not None else []:
                if part.function_call is not None:
                    c = part.function_call
                    verb = "transfers" if c.name == "transfer_to_agent" else "calls"
                    lines.append(Content.assemble((f"{author} {verb} ", "$text-muted"),
                                                  plain(call_signature(c.name or "", c.args, 60))))
                    # What ran inside the call (an AgentTool's agent): outside ADK's events, kept by tui-eval.
                    for inner in nested_under(inv, c.id):
                        lines.append(Content.assemble(("  " * inner.depth + "└ ", "$text-muted"),
                                                      plain(f"{one_line_text(inner.agent or '', 24)} calls ", "$text-muted"),
                                                      plain(call_signature(inner.name, inner.arguments, 60)),
                                                      plain(f" ← {fmt_value(inner.response, 60)}", "$text-muted")
                                                      if inner.response is not None else Content("")))
                elif part.function_response is not None:
                    r = part.function_response
                    lines.append(Content.assemble((f"{author} ← {literal(r.name or '')}: ", "$text-muted"),
                                                  plain(fmt_value(r.response, width))))
                elif part.text:
                    lines.append(Content.assemble((f"{author}: ", "$text-muted"), plain(one_line_text(part.text, width))))
    else:
        for i, call in enumerate(inv.tool_calls):
            verb = "transfers" if call.name == "transfer_to_agent" else "calls"
            lines.append(Content.assemble((f"{verb} ", "$text-muted"), plain(call_signature(call.name or "", call.args, 60))))
            response = _response_for(inv, i, call)
            if response is not _NO_RESPONSE:
                lines.append(Content.assemble((f"  ← {literal(call.name or '')}: ", "$text-muted"),
                                              plain(fmt_value(response, width))))
        for author, text in inv.intermediate_texts:
            lines.append(Content.assemble((f"{one_line_text(author, 24)}: ", "$text-muted"), plain(one_line_text(text, width))))
    if inv.final_response is not None and inv.final_response.text:
        lines.append(Content.assemble(("final: ", "$text-muted"), plain(one_line_text(inv.final_response.text, width))))
    return lines


def one_line_text(value: str, width: int) -> str:
    from .text import one_line

    return one_line(value, width)

