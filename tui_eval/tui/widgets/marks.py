"""Text for a case's repetitions (`✔✘✔✔ 3/4 flaky`), token usage with its estimated cost, and tool latency."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Sequence

from textual.content import Content

from ..text import NO_RESULT_GLYPH, STATUS_GLYPH, STATUS_STYLE, plain

if TYPE_CHECKING:  # pragma: no cover
    from ...engine.latency import ToolLatency
    from ...engine.pricing import CostEstimate
    from ...schema.usage import TokenUsage

_LABEL_STYLE = {"stable pass": "$text-success", "flaky": "bold $text-warning", "stable fail": "$text-error",
                "not evaluated": "$text-muted"}


def marks(statuses: Sequence[int | None], *, current: int | None = None) -> Content:
    """One glyph a repetition's status (`·` not finished yet), then `k/N` and the label once all have
    finished; `current` (1-based) underlines the repetition whose turns are shown. Statuses only: the
    summaries say them, no full result is needed."""
    from ...engine.repeats import summarize_case
    from ...schema.status import EvalStatus

    parts: list[tuple[str, str] | str] = []
    for rep, status in enumerate(statuses, start=1):
        glyph, style = (NO_RESULT_GLYPH, "$text-muted") if status is None else (
            STATUS_GLYPH[EvalStatus(status)], STATUS_STYLE[EvalStatus(status)])
        parts.append((glyph, f"{style} underline" if rep == current else style))
    done = [EvalStatus(s) for s in statuses if s is not None]
    if done and len(done) == len(statuses):
        summary = summarize_case("", done)
        parts.append(f" {summary.passed}/{summary.runs} ")
        parts.append((summary.label.value, _LABEL_STYLE.get(summary.label.value, "")))
    elif statuses:
        parts.append((f" {len(done)}/{len(statuses)} finished", "$text-muted"))
    return Content.assemble(*parts)


def tokens_text(usage: TokenUsage) -> str:
    """`1,234 tok (in 1,000 · out 234 · cached 0)`: compact enough for one line at 80 columns."""
    return (f"{usage.total_tokens:,} tok (in {usage.prompt_tokens:,} · out {usage.output_tokens:,} · "
            f"cached {usage.cached_tokens:,})")


def cost_text(cost: CostEstimate | None) -> str:
    """`est. $0.0012`, `est. ≥ $0.0012` when some model has no price (never a bare dollar figure)."""
    if cost is None:
        return "est. cost unknown"
    return f"est. {'≥ ' if cost.unknown_models else ''}${cost.known_usd:.4f}"


def latency_inline(tools: Iterable[ToolLatency], limit: int = 3) -> str:
    """`get_weather 3× 0.12s p95 0.20s · …`: the slowest tools (by p95) first, `+N more`."""
    ordered = sorted(tools, key=lambda t: -t.p95_seconds)
    shown = [f"{t.name} {t.count}×{' ' + str(t.failed) + '✘' if t.failed else ''} "
             f"{t.mean_seconds:.2f}s p95 {t.p95_seconds:.2f}s" for t in ordered[:limit]]
    more = f" +{len(ordered) - limit} more" if len(ordered) > limit else ""
    return " · ".join(shown) + more


def latency_rows(tools: Sequence[ToolLatency]) -> list[Content]:
    """A small table: tool, calls, ✔/✘, mean and p95 (tool names are agent text: never markup)."""
    if not tools:
        return []
    width = min(18, max(len(t.name) for t in tools))
    rows = [Content.styled(f"  {'tool':<{width}} calls   ✔   ✘    mean     p95", "$text-muted")]
    for t in tools:
        name = t.name if len(t.name) <= width else t.name[: width - 1] + "…"
        rows.append(Content.assemble(
            plain(f"  {name:<{width}}"),
            f" {t.count:>5} {t.passed:>3} ",
            (f"{t.failed:>3}", "$text-error" if t.failed else ""),
            f" {t.mean_seconds:>6.2f}s {t.p95_seconds:>6.2f}s",
        ))
    return rows
