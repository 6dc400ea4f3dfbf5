"""response_match_score: ADK 2.13's Unicode-aware ROUGE-1, rule by rule, and the cheap Porter stemmer."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.support.metric_helpers import rouge1, tokens_per_character
from tui_eval.metrics import get_metric
from tui_eval.metrics import response_match as rm
from tui_eval.metrics.base import MetricInput
from tui_eval.schema.config import Criterion, EvalConfig
from tui_eval.schema.details import RougeDetails
from tui_eval.schema.model import Content, EvalCase, Invocation, Part
from tui_eval.schema.results import EvalStatus


# --- tokenizer --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Hello, World!", ["hello", "world"]),
        ("running runs ran", ["run", "run", "ran"]),  # Porter stems words longer than 3 characters
        ("cats dogs was has", ["cat", "dog", "was", "has"]),  # 'was'/'has' (3 chars) are never stemmed
        ("generously sky skies dying", ["gener", "sky", "sky", "die"]),  # NLTK_EXTENSIONS mode
        ("it's a well-known fact_checked e-mail", ["it", "s", "a", "well", "known", "fact", "check", "e", "mail"]),
        ("", []),
        ("  \t\n ", []),
        ("...!!!", []),
        ("ﬁnance", ["financ"]),  # NFKC turns the ligature into "fi"
        ("１２３ ＡＢＣ", ["123", "abc"]),  # full-width digits and letters
        ("你好世界", ["你", "好", "世", "界"]),  # each CJK character is a token
        ("abc中def", ["abc", "中", "def"]),
        ("ひらがな カタカナ 한국어", ["ひ", "ら", "が", "な", "カ", "タ", "カ", "ナ", "한", "국", "어"]),
        ("ﾊﾝｶｸ", ["ハ", "ン", "カ", "ク"]),  # half-width katakana: NFKC first
        # Thai: a base letter starts a token, vowel and tone marks stay on it
        ("สวัสดีครับ", ["ส", "วั", "ส", "ดี", "ค", "รั", "บ"]),
        ("ภาษา", ["ภ", "า", "ษ", "า"]),  # SARA AA is a letter (Lo), not a mark
        ("฿100", ["฿100"]),  # a Thai-range symbol starts a token; digits join it
        ("café naïve", ["café", "naïve"]),  # non-ASCII words are kept, never stemmed
        ("Cafés running", ["cafés", "run"]),
        ("Straße İstanbul", ["straße", "i̇stanbul"]),
        ("The cats’ toys — “nice”", ["the", "cat", "toy", "nice"]),
        ("e\u0301t\u00e9", ["été"]),  # combining marks stay in the word (and NFKC composes)
        ("x\u0301yz", ["x\u0301yz"]),  # no precomposed form: the mark still keeps the word non-ASCII
        ("привет мир running", ["привет", "мир", "run"]),
        ("٣ apples", ["٣", "appl"]),  # Arabic-Indic digit: alphanumeric, not ASCII
        ("emoji 😀 here", ["emoji", "here"]),
    ],
)
def test_tokenize(text: str, tokens: list[str]) -> None:
    assert rm.tokenize(text) == tokens


def test_caches_do_not_leak_between_calls() -> None:
    first = rm.tokenize("running dogs")
    first.append("mutated")
    assert rm.tokenize("running dogs") == ["run", "dog"]
    assert rouge1("running dogs", "running dogs") == (1.0, 1.0, 1.0)
    assert rouge1("running dogs", "dog") == (0.5, 1.0, 2 * 0.5 * 1.0 / 1.5)


def test_fast_paths_equal_the_per_character_rewrite() -> None:
    # The bytes fast path (ASCII) and the per-chunk cache (other text) must give what ADK's
    # per-character loop gives on the whole text.
    samples = [
        "".join(chr(c) for c in range(128)),
        "Hello_World it's 42nd-street\tTAB\x1cFS\x0bVT done.",
        "UPPER lower MiXeD 123abc abc123 a1b2c3d4",
        "running\r\nflies\x00nulls\x7fdel",
        "Ça va? 你好, สวัสดี — “ok” ﬁ ①②③ x\u0301 ½ Ⅻ \u0e31leading-mark\u00a0nbsp\u3000wide-space",
        "東京の天気は晴れ。 ไทย\u2028สวัสดี 서울 날씨 running!",
    ]
    for text in samples:
        assert rm.tokenize(text) == tokens_per_character(text), text


# --- ROUGE-1 arithmetic -----------------------------------------------------------------------------
def test_rouge1_counts_clipped_overlap() -> None:
    # candidate 6 tokens, reference 6 tokens, overlap {the:1, cat:1, on:1, mat:1} = 4
    p, r, f = rouge1("the cat sat on the mat", "the cat is on a mat")
    assert (p, r) == (4 / 6, 4 / 6)
    assert f == 2 * p * r / (p + r)


def test_rouge1_precision_and_recall_are_candidate_and_reference_sided() -> None:
    p, r, f = rouge1("paris", "the capital is paris")
    assert (p, r) == (1.0, 0.25)
    assert f == pytest.approx(0.4)


def test_rouge1_duplicates_count_at_most_the_other_sides_count() -> None:
    assert rouge1("yes yes yes", "yes")[:2] == (1 / 3, 1.0)


def test_rouge1_empty_cases() -> None:
    assert rouge1("", "") == (0.0, 0.0, 0.0)
    assert rouge1("hello", "") == (0.0, 0.0, 0.0)
    assert rouge1("", "hello") == (0.0, 0.0, 0.0)
    assert rouge1("!!!", "???") == (0.0, 0.0, 0.0)


def test_rouge1_stemming_makes_forms_overlap() -> None:
    assert rouge1("The dogs were running", "the dog runs")[2] == pytest.approx(2 * (3 / 4) * 1 / (3 / 4 + 1))


def test_token_overlap_marks_shared_tokens() -> None:
    out = rm.token_overlap("yes yes no", "yes maybe")
    assert out == {"candidate": [["yes", True], ["yes", False], ["no", False]],
                   "reference": [["yes", True], ["mayb", False]]}


# --- the stemmer ------------------------------------------------------------------------------------
VOCAB = (
    "caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized "
    "hopping tanned falling hissing fizzed failing filing happy sky relational conditional rational "
    "valenci hesitanci digitizer conformabli radicalli differentli vileli analogousli vietnamization "
    "predication operator feudalism decisiveness hopefulness callousness formaliti sensitiviti sensibiliti "
    "triplicate formative formalize electriciti electrical hopeful goodness revival allowance inference "
    "airliner gyroscopic adjustable defensible irritant replacement adjustment dependent adoption homologou "
    "communism activate angulariti homologous effective bowdlerize probate rate cease controll roll "
    "generously dying lying tying news innings outings cannings howe proceed exceed succeed running "
    "abc123 2024s 1st 42nd a1b2 xylophones zzzz eeee ssss yyyy ying"
).split()


def test_stemmer_is_nltks_porter() -> None:
    # Our stemmer (no nltk at run time) stems as nltk's PorterStemmer, which rouge-score uses; and a word
    # tokenizes exactly as rouge-score's own tokenizer with that stemmer makes it.
    from nltk.stem.porter import PorterStemmer
    from rouge_score.tokenize import tokenize as rouge_tokenize

    from tui_eval.metrics.porter import stem

    reference = PorterStemmer()
    for word in VOCAB:
        assert stem(word) == reference.stem(word), word
        assert rm.rouge_default_tokens(word) == rouge_tokenize(word, reference), word


def test_importing_the_metric_does_not_import_nltk() -> None:
    code = (
        "import sys\n"
        "from tui_eval.metrics import response_match as rm\n"
        "assert 'nltk' not in sys.modules and 'rouge_score' not in sys.modules\n"
        "assert rm.tokenize('running dogs') == ['run', 'dog']\n"
        # stemming needs no nltk at all (tui_eval.metrics.porter is the algorithm itself)
        "assert rm.rouge1_details('The dogs were running', 'the dog runs')[1] == 1.0\n"
        "assert 'nltk' not in sys.modules and 'numpy' not in sys.modules and 'rouge_score' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_stemming_loads_nothing_and_starts_no_thread() -> None:
    # What warm_up() used to hide (nltk's slow import on a thread) is gone: the first stem is immediate.
    code = (
        "import sys, threading\n"
        "from tui_eval.metrics import response_match as rm\n"
        "before = set(sys.modules)\n"
        "assert rm.tokenize('generously running') == ['gener', 'run']\n"
        "assert set(sys.modules) == before, sorted(set(sys.modules) - before)\n"
        "assert threading.active_count() == 1\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- the metric -------------------------------------------------------------------------------------
def turn(response: Content | None) -> Invocation:
    return Invocation(user_content=Content.from_text("q"), final_response=response)


def text(*parts: str | None) -> Content:
    return Content(parts=[Part(text=p) for p in parts], role="model")


def metric_input(actual: list[Invocation], expected: list[Invocation], threshold: float = 0.8,
                 seen: list[int] | None = None) -> MetricInput:
    crit = Criterion("response_match_score", threshold, raw={"threshold": threshold})
    return MetricInput(
        criterion=crit,
        case=EvalCase(eval_id="case", conversation=expected),
        actual=actual,
        expected=expected,
        config=EvalConfig(criteria={"response_match_score": crit}),
        progress=seen.append if seen is not None else (lambda _i: None),
    )


def test_metric_is_registered() -> None:
    spec = get_metric("response_match_score")
    assert spec is not None and spec.needs_reference and not spec.needs_judge
    assert spec.evaluate is rm.evaluate


def test_metric_joins_text_parts_with_newlines_and_reads_none_as_empty() -> None:
    seen: list[int] = []
    actual = [turn(text("Paris is", None, "the capital")), turn(None), turn(text("yes"))]
    expected = [turn(text("the capital: Paris is")), turn(text("")), turn(None)]
    result = rm.evaluate(metric_input(actual, expected, threshold=0.3, seen=seen))
    assert [r.score for r in result.per_invocation] == [1.0, 0.0, 0.0]
    assert [r.status for r in result.per_invocation] == [EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.FAILED]
    assert result.score == pytest.approx(1 / 3) and result.status is EvalStatus.PASSED
    assert result.per_invocation[0].details == RougeDetails(precision=1.0, recall=1.0, shared_tokens=4,
                                                            candidate_tokens=4, reference_tokens=4)
    assert result.criterion == {"threshold": 0.3}
    assert seen == [0, 1, 2]
    json.dumps(result.to_record())


def test_metric_joined_parts_do_not_glue_words() -> None:
    # "\n" between parts separates "abc" and "def": glued they would be one token "abcdef".
    result = rm.evaluate(metric_input([turn(text("abc", "def"))], [turn(text("abc def"))]))
    assert result.score == 1.0


def test_metric_threshold() -> None:
    actual, expected = [turn(text("a b c d"))], [turn(text("a b c e"))]
    assert rm.evaluate(metric_input(actual, expected, threshold=0.75)).status is EvalStatus.PASSED
    assert rm.evaluate(metric_input(actual, expected, threshold=0.76)).status is EvalStatus.FAILED


def test_metric_without_reference_is_not_evaluated() -> None:
    inp: Any = metric_input([turn(text("a"))], [turn(text("a"))])
    inp.expected = None
    assert rm.evaluate(inp).status is EvalStatus.NOT_EVALUATED


def _retained_after_scoring(pairs: list[tuple[str, str]]) -> int:
    """Python memory still allocated after scoring the pairs (their texts were allocated before)."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        for candidate, reference in pairs:
            rouge1(candidate, reference)
        gc.collect()
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def test_a_one_shot_batch_keeps_no_counts_and_repeats_are_scored_the_same() -> None:
    """Texts scored once keep next to nothing; texts that come back are memoised, with equal scores."""
    words = "agent tool weather forecast booking flight hotel kitchen thermostat refund invoice".split()

    def text(i: int, side: str) -> str:
        return " ".join(f"{words[(i * 7 + k) % len(words)]}{(i * 31 + k) % 97}" for k in range(40)) + f" {side}{i}"

    pairs = [(text(i, "c"), text(i, "r")) for i in range(2000)]
    rouge1(" ".join(words), " ".join(f"{w}{k}" for w in words for k in range(97)))  # every word's stem cached
    rm._text_counts.clear()
    rm._seen_once.clear()
    first = [rouge1(c, r) for c, r in pairs[200:250]]
    once = _retained_after_scoring(pairs[250:]) / (2 * 1750)  # per text, each scored once
    again = _retained_after_scoring(pairs[200:400]) / (2 * 200)  # per text, each now scored a second time
    assert [rouge1(c, r) for c, r in pairs[200:250]] == first
    assert again > 300, again  # a memoised text's counts: ~900 bytes here
    assert once < again / 3, (once, again)
