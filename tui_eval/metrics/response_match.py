"""response_match_score: ROUGE-1 F-measure of the final response against the reference, as ADK 2.13 scores it."""

from __future__ import annotations

import logging
import re
import unicodedata
from itertools import chain
from typing import Iterable, Iterator

from ..schema.details import RougeDetails
from ..schema.fast import trusted
from ..schema.model import content_text
from ..schema.results import EvalStatus, InvocationMetricResult, MetricResult
from .base import MetricInput, builtin
from .porter import stem as porter_stem

METRIC_NAME = "response_match_score"
logger = logging.getLogger(__name__)

# Caches are keyed by text; eval data repeats its references and vocabulary, so they stay small. The
# bound only protects a long-lived dashboard (watch mode) from growing without limit.
_MAX_TEXTS = 50_000
_MAX_WORDS = 200_000


# --- rouge-score's DefaultTokenizer(use_stemmer=True), on one ASCII word ---------------------------
# rouge-score stems with nltk's PorterStemmer(); `porter.stem` is the same algorithm without nltk
# (importing nltk was a large CPU and memory cost per run). Stems are cached per word below.
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")


def rouge_default_tokens(text: str) -> list[str]:
    """rouge_score.tokenize.tokenize(text, PorterStemmer()), step for step."""
    pieces = re.split(r"\s+", _NON_ALNUM.sub(" ", text.lower()))
    pieces = [porter_stem(p) if len(p) > 3 else p for p in pieces]
    return [p for p in pieces if _VALID_TOKEN.match(p)]


class _WordTokens(dict):  # type: ignore[type-arg]
    """ASCII word (str, or bytes on the fast path) -> its rouge-score token, "" when rouge-score drops it.

    The words reaching here are runs of [a-z0-9] (ASCII letters and digits of lowercased text), so
    rouge-score makes at most one token of each.
    """

    def __missing__(self, word: str | bytes) -> str:
        tokens = rouge_default_tokens(word.decode("ascii") if isinstance(word, bytes) else word)
        token = tokens[0] if tokens else ""
        if len(self) < _MAX_WORDS:
            self[word] = token
        return token


_word_tokens = _WordTokens()
_bytes_word_tokens = _WordTokens()


# --- ADK 2.13's _UnicodeAwareTokenizer --------------------------------------------------------------
def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF  # CJK Unified Ideographs
        or 0x3040 <= code <= 0x309F  # Hiragana
        or 0x30A0 <= code <= 0x30FF  # Katakana
        or 0xAC00 <= code <= 0xD7AF  # Hangul Syllables
    )


def _is_non_spaced(code: int) -> bool:
    return (
        0x0E00 <= code <= 0x0E7F  # Thai
        or 0x0E80 <= code <= 0x0EFF  # Lao
        or 0x1780 <= code <= 0x17FF  # Khmer
        or 0x1000 <= code <= 0x109F  # Myanmar
    )


class _CharRule(dict):  # type: ignore[type-arg]
    """Code point -> what ADK's per-character loop emits for it, for `str.translate`.

    The loop's output for a character depends on that character alone, so the whole loop is one
    `translate` over a table filled on demand.
    """

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if _is_cjk(code):
            out = f" {char} "  # each CJK character is a token of its own
        elif _is_non_spaced(code):
            # A base letter starts a grapheme cluster; a combining mark stays on the letter before it.
            out = char if unicodedata.category(char).startswith("M") else f" {char}"
        elif char.isalnum() or unicodedata.category(char).startswith("M"):
            out = char
        else:
            out = " "
        self[code] = out
        return out


_char_rule = _CharRule()
# ASCII bytes -> lowercase letters and digits kept, everything else a space: on ASCII text NFKC changes
# nothing and ADK's loop keeps exactly [a-z0-9] of the lowercased text, so this one C-speed
# `bytes.translate` plus `split` gives its words (several times faster than a regex).
_ASCII_RULE = bytes(
    c + 32 if 65 <= c <= 90 else c if 97 <= c <= 122 or 48 <= c <= 57 else 32 for c in range(256)
)


def _word_list_tokens(words: list[str]) -> list[str]:
    """Tokens of ADK's words: ASCII words through rouge-score, the others kept as they are."""
    word_tokens = _word_tokens
    tokens = [word_tokens[w] if w.isascii() else w for w in words]
    return [t for t in tokens if t] if "" in tokens else tokens


class _ChunkTokens(dict):  # type: ignore[type-arg]
    """Whitespace-free chunk of NFKC-normalised, lowercased text -> its tokens.

    ADK rewrites each character on its own and whitespace always becomes a space, so no token spans
    two chunks: a text's tokens are its chunks' tokens end to end. Chunks ("paris,", "東京", "สวัสดี")
    repeat across an eval set, so each is rewritten once and then only looked up.
    """

    def __missing__(self, chunk: str) -> tuple[str, ...]:
        tokens = tuple(_word_list_tokens(chunk.translate(_char_rule).split()))
        if len(self) < _MAX_WORDS:
            self[chunk] = tokens
        return tokens


_chunk_tokens = _ChunkTokens()


def _token_stream(text: str) -> Iterator[str]:
    """The text's tokens in order, with "" where rouge-score drops a word (callers skip those)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text).lower()
        if not text.isascii():
            return chain.from_iterable(map(_chunk_tokens.__getitem__, text.split()))
        # else NFKC made it ASCII (ligatures, full-width letters and digits): the fast path applies
    # ASCII: no per-character Python work at all.
    return map(_bytes_word_tokens.__getitem__, text.encode("ascii").translate(_ASCII_RULE).split())


def tokenize(text: str) -> list[str]:
    """The ROUGE tokens of a text, exactly as ADK 2.13's response_match_score tokenizes it."""
    return [t for t in _token_stream(text) if t]


try:  # Counter's C counting loop, without Counter.__init__'s overhead (which counts on short texts)
    from collections import _count_elements  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - every CPython has it; stay correct elsewhere

    def _count_elements(mapping: dict[str, int], iterable: Iterable[str]) -> None:
        for elem in iterable:
            mapping[elem] = mapping.get(elem, 0) + 1


_text_counts: dict[str, tuple[dict[str, int], int]] = {}
_seen_once: set[int] = set()  # the texts' hashes: they keep no text alive


def _counts(text: str) -> tuple[dict[str, int], int]:
    """(token -> count, token total) of a text, memoised once the text comes back. No token list is
    built: counts are all ROUGE-1 needs.

    A one-shot run scores each text once: bench/headless_run.py's cases tokenize none twice, and
    memoising all of them kept a noticeable part of the run's peak RSS in counts for nothing. The
    texts that do repeat (references across re-runs in the live loop, both sides on
    a re-score) are counted twice, then served from the memo."""
    hit = _text_counts.get(text)
    if hit is not None:
        return hit
    counts: dict[str, int] = {}
    _count_elements(counts, _token_stream(text))
    counts.pop("", None)
    hit = (counts, sum(counts.values()))
    key = hash(text)  # (a collision only memoises a text one sighting early)
    if key in _seen_once:
        if len(_text_counts) >= _MAX_TEXTS:
            _text_counts.clear()
        _text_counts[text] = hit
    else:
        if len(_seen_once) >= _MAX_TEXTS:
            _seen_once.clear()
        _seen_once.add(key)
    return hit


# --- rouge-score's arithmetic -----------------------------------------------------------------------
def rouge1_details(candidate: str, reference: str) -> tuple[float, float, float, int, int, int]:
    """(precision, recall, fmeasure, shared tokens, candidate tokens, reference tokens) of ROUGE-1."""
    ref_counts, ref_total = _counts(reference)
    if candidate == reference:  # common (an unchanged answer); the general path gives these same floats
        if ref_total:
            return 1.0, 1.0, 1.0, ref_total, ref_total, ref_total
        return 0.0, 0.0, 0.0, 0, 0, 0
    cand_counts, cand_total = _counts(candidate)
    small, large = (ref_counts, cand_counts) if len(ref_counts) <= len(cand_counts) else (cand_counts, ref_counts)
    overlap = 0
    get = large.get
    for token, count in small.items():
        other = get(token)
        if other is not None:
            overlap += count if count < other else other
    precision = overlap / max(cand_total, 1)
    recall = overlap / max(ref_total, 1)
    fmeasure = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, fmeasure, overlap, cand_total, ref_total


def token_overlap(candidate: str, reference: str) -> dict[str, list[list[str | bool]]]:
    """Each token of both texts with whether ROUGE-1 counted it as shared (for a word-level diff).

    The first k occurrences of a token on each side are the shared ones, k being the smaller count.
    """
    cand_counts, ref_counts = _counts(candidate)[0], _counts(reference)[0]

    def flags(text: str, mine: dict[str, int], other: dict[str, int]) -> list[list[str | bool]]:
        seen: dict[str, int] = {}
        out: list[list[str | bool]] = []
        for token in tokenize(text):
            n = seen.get(token, 0)
            seen[token] = n + 1
            out.append([token, n < min(mine[token], other.get(token, 0))])
        return out

    return {"candidate": flags(candidate, cand_counts, ref_counts),
            "reference": flags(reference, ref_counts, cand_counts)}


# --- the metric -------------------------------------------------------------------------------------
# A turn whose response equals its reference (an unchanged answer, common) scores from the token count
# alone: one shared, read-only result per (count, status) instead of two objects per turn.
_same_text_turns: dict[tuple[int, EvalStatus], InvocationMetricResult] = {}


def _turn(precision: float, recall: float, score: float, shared: int, cand_total: int, ref_total: int,
          status: EvalStatus) -> InvocationMetricResult:
    details = trusted(RougeDetails, kind="rouge", precision=precision, recall=recall, shared_tokens=shared,
                      candidate_tokens=cand_total, reference_tokens=ref_total)
    return trusted(InvocationMetricResult, score=score, status=status, reason=None, details=details)


def evaluate(inp: MetricInput) -> MetricResult:
    """Score each turn's final response against its reference; the case score is their mean."""
    threshold = inp.criterion.threshold
    criterion = inp.criterion.to_dict()
    if inp.expected is None:
        return MetricResult.not_evaluated(METRIC_NAME, threshold, "no expected turns", criterion)
    passed, failed = EvalStatus.PASSED, EvalStatus.FAILED  # status_for without None checks and enum lookups
    progress = inp.progress
    per_invocation = []
    for i, (actual, expected) in enumerate(zip(inp.actual, inp.expected)):
        candidate, reference = content_text(actual.final_response), content_text(expected.final_response)
        if candidate == reference:
            ref_total = _counts(reference)[1]
            score = 1.0 if ref_total else 0.0
            status = passed if score >= threshold else failed
            turn = _same_text_turns.get((ref_total, status))
            if turn is None:
                turn = _turn(score, score, score, ref_total, ref_total, ref_total, status)
                if len(_same_text_turns) < _MAX_WORDS:
                    _same_text_turns[(ref_total, status)] = turn
        else:
            precision, recall, score, shared, cand_total, ref_total = rouge1_details(candidate, reference)
            turn = _turn(precision, recall, score, shared, cand_total, ref_total,
                         passed if score >= threshold else failed)
        per_invocation.append(turn)
        progress(i)
    return MetricResult.mean_of(METRIC_NAME, threshold, criterion, per_invocation)


SPEC = builtin(METRIC_NAME, evaluate, "ROUGE-1 F-measure of the final response against the expected one")
