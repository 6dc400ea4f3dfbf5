"""The dashboard's theme, and the choice of the ANSI theme on terminals with only 16 colours."""

from __future__ import annotations

import os

from textual.theme import Theme

# Colours from the xterm-256 palette, so 256-colour terminals show them exactly; 16-colour terminals get
# the built-in "ansi-dark" theme instead, which uses the terminal's own palette.
TUI_EVAL_THEME = Theme(
    name="tui-eval",
    primary="#0087D7",
    secondary="#AF87FF",
    accent="#FFAF00",
    warning="#FFD75F",
    error="#FF5F5F",
    success="#5FD75F",
    foreground="#E4E4E4",
    background="#121212",
    surface="#1C1C1C",
    panel="#303030",
    dark=True,
)

_SIXTEEN_COLOUR_TERMS = {"linux", "xterm", "screen", "vt100", "vt220", "rxvt", "ansi", "cons25", "tmux"}


def default_theme() -> str:
    """`TUI_EVAL_THEME` if set; "ansi-dark" when the terminal looks 16-colour; else our own."""
    chosen = os.environ.get("TUI_EVAL_THEME")
    if chosen:
        return chosen
    colorterm = os.environ.get("COLORTERM", "").lower()
    term = os.environ.get("TERM", "").lower()
    if colorterm in ("truecolor", "24bit") or "256" in term or "direct" in term:
        return TUI_EVAL_THEME.name
    if term in _SIXTEEN_COLOUR_TERMS or term.endswith(("-16color", "-color")) or os.environ.get("NO_COLOR") is not None:
        return "ansi-dark"
    return TUI_EVAL_THEME.name
