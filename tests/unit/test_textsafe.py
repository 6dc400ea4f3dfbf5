"""safe_line / safe_text / xml_safe: control characters become visible escapes, plain text is untouched."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from tui_eval.textsafe import safe_line, safe_text, xml_safe


def test_plain_text_is_returned_unchanged() -> None:
    s = "Hello, 東京 — ok? tab-free"
    assert safe_line(s) is s and safe_text(s) is s and xml_safe(s) is s


def test_safe_line_escapes_every_control_character_including_newline() -> None:
    assert safe_line("a\x1b]0;t\x07b") == "a\\x1b]0;t\\x07b"
    assert safe_line("x\r\ny\t") == "x\\r\\ny\\t"
    assert safe_line("\x9b2J\x7f\u202e") == "\\x9b2J\\x7f\\u202e"
    assert all(ord(c) >= 0x20 for c in safe_line("".join(map(chr, range(0x100)))))


def test_safe_text_keeps_newlines_and_tabs_only() -> None:
    assert safe_text("a\nb\tc\rd\x1b[2J") == "a\nb\tc\\rd\\x1b[2J"


def test_xml_safe_output_always_parses() -> None:
    nasty = "".join(map(chr, range(0x20))) + "\ud800\ufffe\uffff\x85"
    el = ET.Element("t", name=xml_safe(nasty))
    el.text = xml_safe(nasty)
    ET.fromstring(ET.tostring(el, encoding="utf-8"))
