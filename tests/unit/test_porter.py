"""Our Porter stemmer against nltk's (the one rouge-score uses): the same stem for every word, and no nltk at run time."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.stem.porter import PorterStemmer

from tests.support.evalfiles import dice_pair
from tui_eval.metrics.porter import stem

REFERENCE = PorterStemmer()  # nltk's default mode, NLTK_EXTENSIONS, exactly as rouge_score builds it

# Every suffix a rule of the algorithm looks at, to steer generated words into the rules.
SUFFIXES = (
    "sses ies ss s eed ed ing ied at bl iz y ational tional enci anci izer bli alli entli eli ousli ization "
    "ation ator alism iveness fulness ousness aliti iviti biliti fulli logi icate ative alize iciti ical ful "
    "ness al ance ence er ic able ible ant ement ment ent ion sion tion ou ism ate iti ous ive ize e ll"
).split()


@lru_cache(maxsize=1)
def stdlib_vocabulary() -> frozenset[str]:
    """Every distinct token rouge-score would make ([a-z0-9]+ of the lowercased text) in the Python
    standard library's .py files: tens of thousands of real English words, identifiers and numbers."""
    root = Path(sysconfig.get_paths()["stdlib"])
    words: set[bytes] = set()
    token = re.compile(rb"[a-z0-9]+")  # on bytes: the same tokens (ASCII), several times faster than str
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "site-packages"]  # the standard library only, no installed packages
        for name in files:
            if name.endswith(".py"):
                words.update(token.findall((Path(folder) / name).read_bytes().lower()))
    return frozenset(w.decode("ascii") for w in words)


def test_every_word_of_the_standard_library_stems_as_nltk() -> None:
    words = stdlib_vocabulary()
    # A floor, so the proof cannot shrink to nothing unnoticed (3.11's stdlib gives ~60,000).
    assert len(words) > 20_000
    wrong = sorted(w for w in words if stem(w) != REFERENCE.stem(w))
    assert wrong == [], f"{len(wrong)} words differ, e.g. {[(w, stem(w), REFERENCE.stem(w)) for w in wrong[:10]]}"


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=20))
def test_generated_lowercase_words_stem_as_nltk(word: str) -> None:
    assert stem(word) == REFERENCE.stem(word)


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet="aeiouybcdlmnrstwxz", min_size=0, max_size=12), st.sampled_from(SUFFIXES),
       st.sampled_from(["", "s", "ed", "ing", "ly", "e"]))
def test_generated_words_with_the_rules_suffixes_stem_as_nltk(head: str, suffix: str, tail: str) -> None:
    # Random letters rarely end in a rule's suffix; these always do (vowel-heavy, y and w/x/z included).
    word = (head + suffix + tail)[:20]
    assert stem(word) == REFERENCE.stem(word)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="abcdefgilnorstuy0123456789", min_size=1, max_size=20))
def test_generated_words_with_digits_stem_as_nltk(word: str) -> None:
    # rouge-score's tokens are [a-z0-9]+: digits count as consonants.
    assert stem(word) == REFERENCE.stem(word)


# nltk's own departures from the 1980 paper and the corners of the rules, one word at least each.
SPECIAL = (
    # the irregular forms pool (looked up before any rule)
    "sky skies dying lying tying news innings inning outings outing cannings canning howe proceed exceed "
    "succeed proceeds exceeded succeeding "
    # step 1a: nltk keeps "ie" in four-letter "-ies" words
    "ties dies lies pies flies skies spies caresses ponies caress cats ss sss is "
    # step 1b: "ied" ("died" -> "die", "spied" -> "spi"), "eed", "ed"/"ing" with and without a vowel
    "died tied spied cried carried feed agreed bleed need plastered bled motoring sing conflated troubled "
    "sized hopping tanned falling hissing fizzed failing filing owed aged ageing hoping oped ying "
    # step 1c: y -> i only after a consonant that is not the whole stem
    "happy enjoy by spy fly try say boy yy yyy yyyy cry ably "
    # step 2, including nltk's alli-first, fulli and logi rules
    "relational conditional rational valenci hesitanci digitizer conformabli radicalli differentli vileli "
    "analogousli vietnamization predication operator feudalism decisiveness hopefulness callousness "
    "formaliti sensitiviti sensibiliti rationalli conditionalli generalli finalli totalli beautifulli "
    "carefulli geologi theologi biologi archaeologi philologi logi ologi "
    # step 3
    "triplicate formative formalize electriciti electrical hopeful goodness "
    # step 4, including ement before ment before ent and the s/t condition of ion
    "revival allowance inference airliner gyroscopic adjustable defensible irritant replacement adjustment "
    "dependent adoption homologou communism activate angulariti homologous effective bowdlerize agreement "
    "element cement movement government decision explosion religion onion "
    # step 5 and "-ly" words
    "probate rate cease controll roll generously quickly easily really only fully ally "
    # digits, short words, repeated letters
    "abc123 2024s 1st 42nd a1b2 xylophones zzzz eeee ssss yyyy a ab abc ing ed eed ied ies "
)


@pytest.mark.parametrize("word", SPECIAL.split())
def test_special_cases_stem_as_nltk(word: str) -> None:
    assert stem(word) == REFERENCE.stem(word)


def test_known_stems() -> None:
    # Independent of nltk: the paper's and nltk's documented examples.
    assert [stem(w) for w in ("caresses", "ponies", "ties", "feed", "agreed", "hopping", "happy", "enjoy",
                              "relational", "generously", "dying", "skies", "died", "spied")] == [
        "caress", "poni", "tie", "feed", "agre", "hop", "happi", "enjoy", "relat", "gener", "die", "sky", "die",
        "spi"]


def test_a_deterministic_headless_run_never_imports_nltk_or_numpy(tmp_path: Path) -> None:
    # The whole `tui-eval run` of recorded turns, response_match_score included, in a fresh interpreter.
    golden, recorded = dice_pair(tmp_path)
    (tmp_path / "test_config.json").write_text(
        '{"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}}')
    code = (
        "import io, sys\n"
        "from tui_eval.cli import main\n"
        f"code = main(['run', '--agent', 'replay:{recorded}', '{golden}', '--no-save'], out=io.StringIO())\n"
        "assert code == 1, code\n"  # c_args fails: the run really scored
        "assert 'tui_eval.metrics.response_match' in sys.modules\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('nltk', 'numpy', 'rouge_score'))\n"
        "print(','.join(bad))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""
