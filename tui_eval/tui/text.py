"""Rendering helpers: user data as literal Content, status glyphs, scores and the word diff."""

from __future__ import annotations

import os
import re
from typing import Any

from textual.content import Content

from ..schema.status import EvalStatus

# C0 controls (but newline and tab), DEL and C1 controls, shown as their Unicode pictures or \xNN so an
# escape sequence in agent output is seen, never obeyed.
_CONTROL = {c: chr(0x2400 + c) for c in range(0x20) if c not in (0x09, 0x0A)}
_CONTROL[0x7F] = "\u2421"
_CONTROL.update({c: f"\\x{c:02x}" for c in range(0x80, 0xA0)})


def literal(value: Any) -> str:
    """A string safe to render: control characters made visible."""
    return str(value).translate(_CONTROL)


def plain(value: Any, style: str = "") -> Content:
    """User, agent or judge text as Content: never markup, never escape sequences."""
    content = Content(literal(value))
    return content.stylize(style) if style else content


def one_line(value: Any, width: int = 60) -> str:
    """A literal single-line preview of a text, cut with an ellipsis at a word boundary (mid-word only
    when a single word is most of the width)."""
    text = " ".join(literal(value).split())
    return text if len(text) <= width else cut_words(text, width)


#: Characters of one text the turn view lays out at once: wrapping a huge reply whole froze the UI.
CLIP_CHARS = 20_000


def clip(text: str, limit: int = CLIP_CHARS) -> tuple[str, bool]:
    """The head of a long text the turn view shows (cut at a line or word end), and whether it was cut."""
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    for sep in ("\n", " "):
        at = head.rfind(sep)
        if at >= limit * 0.8:
            return head[:at], True
    return head, True


def cut_middle(name: str, width: int) -> str:
    """An identifier (a metric name) in at most `width` characters: its start and its end kept, `…`
    between them, so `rubric_based_final_response_quality_v1` stays recognisable."""
    if len(name) <= width:
        return name
    tail = (width - 1) // 3
    return name[: width - 1 - tail] + "…" + name[len(name) - tail:]


def cut_words(text: str, width: int) -> str:
    """`text` in at most `width` characters, ending in `…` after the last whole word that fits."""
    if len(text) <= width:
        return text
    head = text[: max(0, width - 1)]
    space = head.rfind(" ")
    if space >= width * 0.6:
        head = head[:space].rstrip(" ,;:")
    return head + "…"


# Glyphs and words come from EvalStatus (the one status vocabulary); only the colours are the UI's.
# Keyed by EvalStatus; a status as a plain int (a case summary's) finds the same entry.
STATUS_GLYPH: dict[int, str] = {s: s.glyph for s in EvalStatus}
STATUS_WORD: dict[int, str] = {s: s.label for s in EvalStatus}
STATUS_STYLE: dict[int, str] = {EvalStatus.PASSED: "$text-success", EvalStatus.FAILED: "$text-error",
                                EvalStatus.NOT_EVALUATED: "$text-warning", EvalStatus.INFORMATIONAL: "$text-muted"}
#: The theme variable of each status's colour, for Rich cells (`rich_style`), which cannot use CSS variables.
STATUS_VAR: dict[int, str] = {EvalStatus.PASSED: "success", EvalStatus.FAILED: "error",
                              EvalStatus.NOT_EVALUATED: "warning", EvalStatus.INFORMATIONAL: "secondary"}
NO_RESULT_GLYPH = "·"
RUNNING_GLYPH = "◌"


def status_content(status: int | None, *, word: bool = False) -> Content:
    """A coloured status glyph (and word): ✔ passed, ✘ failed, – not evaluated, · no result."""
    if status is None:
        return Content.styled(NO_RESULT_GLYPH + (" no result" if word else ""), "$text-muted")
    glyph = STATUS_GLYPH[status]
    text = f"{glyph} {STATUS_WORD[status]}" if word else glyph
    return Content.styled(text, STATUS_STYLE[status])


#: The unit of each informational metric's value (a count, tokens or seconds, never a score). A case's
#: value is the mean over its turns, so the case's reads `calls/turn`.
INFO_UNITS: dict[str, str] = {"tool_call_count_v1": "calls", "inference_call_count_v1": "model calls",
                              "token_usage_v1": "tok", "invocation_duration_v1": "s"}


def info_value(name: str, value: float | None, *, per_turn: bool) -> str:
    """An informational metric's value with its unit: `3 calls`, `0.08 s`; a case's mean `1.5 calls/turn`
    (`per_turn`). Seconds always with two decimals, counts with up to four figures; `n/a` without one."""
    if value is None:
        return "n/a"
    unit = INFO_UNITS.get(name)
    figure = info_figure(name, value)
    if unit is None:
        return f"{figure} informational"
    return f"{figure} {unit}/turn" if per_turn else f"{figure} {unit}"


def info_figure(name: str, value: float | None) -> str:
    """An informational value's figure alone: seconds with two decimals, counts and tokens with up to four
    figures, `—` without one."""
    if value is None:
        return "—"
    return f"{value:.2f}" if INFO_UNITS.get(name) == "s" else f"{value:.4g}"


def fmt_score(score: float | None) -> str:
    """A score as two decimals, or a dash when there is none."""
    if score is None:
        return "—"
    return f"{score:.2f}"


def fmt_value(value: Any, width: int = 200) -> str:
    """A JSON-ish one-line rendering of an argument value (literal, cut to width)."""
    import json

    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return one_line(text, width)


def call_signature(name: str, args: Any, width: int = 200) -> str:
    """`name(key=value, ...)` of a tool call, literal and cut to width.

    Spaces inside an argument are no-break spaces, so a narrow pane wraps the call between arguments
    (after `, `), never inside one (`date='5` / `May'`)."""
    if isinstance(args, dict):
        inner = ", ".join(_unbroken(f"{k}={fmt_value(v, width)}") for k, v in args.items())
    elif args is None:
        inner = ""
    else:
        inner = _unbroken(fmt_value(args, width))
    # one_line folds every kind of whitespace (no-break spaces too): mark them until it is done.
    return one_line(f"{name}({inner})", width).replace(_KEEP, "\u00a0")


_KEEP = "\ue000"  # a private-use character: never in a tool call's own text that we show


def _unbroken(text: str) -> str:
    return " ".join(text.split()).replace(" ", _KEEP)


_WORD = re.compile(r"\S+")
# Past this many words a diff costs more than it tells; show the texts undiffed.
MAX_DIFF_WORDS = 4000
REMOVED_STYLE = "strike $text-error"
ADDED_STYLE = "underline $text-success"


def word_diff(expected: str, actual: str) -> tuple[Content, Content]:
    """Expected and actual as Content, words only in expected struck out, words only in actual underlined."""
    from difflib import SequenceMatcher

    exp_text, act_text = literal(expected), literal(actual)
    exp_words = [(m.start(), m.end()) for m in _WORD.finditer(exp_text)]
    act_words = [(m.start(), m.end()) for m in _WORD.finditer(act_text)]
    left, right = Content(exp_text), Content(act_text)
    if len(exp_words) + len(act_words) > MAX_DIFF_WORDS:
        return left, right
    a = [exp_text[s:e] for s, e in exp_words]
    b = [act_text[s:e] for s, e in act_words]
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    removed: list[tuple[int, int]] = []
    added: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            removed.append((exp_words[i1][0], exp_words[i2 - 1][1]))
        if j2 > j1:
            added.append((act_words[j1][0], act_words[j2 - 1][1]))
    if os.environ.get("NO_COLOR") is not None:
        # No colour (and a plain capture keeps no strike or underline): mark the words as git's word
        # diff does, so what changed still shows.
        return _marked(exp_text, removed, "[-", "-]", REMOVED_STYLE), _marked(act_text, added, "{+", "+}", ADDED_STYLE)
    for start, end in removed:
        left = left.stylize(REMOVED_STYLE, start, end)
    for start, end in added:
        right = right.stylize(ADDED_STYLE, start, end)
    return left, right


def _marked(text: str, spans: list[tuple[int, int]], opener: str, closer: str, style: str) -> Content:
    """`text` with each span wrapped in `opener`/`closer` (and styled)."""
    parts: list[Content] = []
    at = 0
    for start, end in spans:
        parts.append(Content(text[at:start]))
        parts.append(Content.styled(opener + text[start:end] + closer, style))
        at = end
    parts.append(Content(text[at:]))
    return Content("").join(parts)


def rich_style(app: Any, var: str, **attributes: Any) -> Any:
    """A Rich Style coloured by a theme variable (for Rich Text cells, e.g. in a DataTable)."""
    from rich.style import Style
    from textual.color import Color, ColorParseError

    color = None
    value = app.theme_variables.get(var) if var else None
    if value:
        try:
            color = Color.parse(value).rich_color
        except ColorParseError:  # a variable that is not a plain colour ("auto 60%")
            color = None
    return Style(color=color, **attributes)
