"""Make agent, judge and eval text safe to print: control characters become visible escapes.

Text from an eval file, an agent or a judge may carry terminal escape sequences (an OSC title, an OSC 52
clipboard write, a CSI screen clear), a carriage return that overwrites a line, or a newline that forges
a summary line. Every terminal output of tui-eval passes such text through `safe_line` (one line, the
newline escaped too) or `safe_text` (newlines and tabs kept), so it is shown literally and never acted on.
Pure and dependency-free: any layer may use it.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls (a terminal may take U+009B as CSI), the Unicode line and paragraph
# separators, and the bidirectional overrides and isolates (they reorder what the reader sees).
_OTHER = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE_LINE = re.compile(f"[\x00-\x1f{_OTHER}]")
_UNSAFE_TEXT = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHER}]")  # keeps \t and \n

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\x1b"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_line(text: object) -> str:
    """`text` as one printable line: every control character (newline included) as a visible escape."""
    s = text if isinstance(text, str) else str(text)
    if _UNSAFE_LINE.search(s) is None:  # the common case costs one regex scan, no copy
        return s
    return _UNSAFE_LINE.sub(_escape, s)


def safe_text(text: object) -> str:
    """`text` for printing with its newlines and tabs kept; every other control character escaped."""
    s = text if isinstance(text, str) else str(text)
    if _UNSAFE_TEXT.search(s) is None:
        return s
    return _UNSAFE_TEXT.sub(_escape, s)


# XML 1.0 allows only tab, newline and carriage return below U+0020, no lone surrogates and not U+FFFE or
# U+FFFF; the C1 range is legal but a JUnit viewer in a terminal may act on it, so it is escaped too, as are
# the bidirectional marks, overrides and isolates (a U+202E in a failure text reorders what a reviewer sees).
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff"
                      "\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def xml_safe(text: object) -> str:
    """`text` with every character XML 1.0 cannot carry (or a viewer could act on) as a visible escape."""
    s = text if isinstance(text, str) else str(text)
    if _XML_BAD.search(s) is None:
        return s
    return _XML_BAD.sub(_escape, s)
