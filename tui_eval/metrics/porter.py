"""The Porter stemmer rouge-score stems with (nltk's PorterStemmer, default NLTK_EXTENSIONS mode), without nltk.

Porter, M. "An algorithm for suffix stripping", Program 14.3 (1980): 130-137, plus the departures nltk's
default mode makes from the paper (each marked "nltk:" below). rouge-score calls
`nltk.stem.porter.PorterStemmer().stem(word)`; importing nltk for it (its __init__ loads hundreds
of modules and numpy) cost CPU and memory in every run that scores responses (bench/README.md). This
module is the algorithm alone: tests/unit/test_porter.py checks it word for word against nltk on the
standard library's whole vocabulary, on generated strings and on nltk's special cases.

Throughout, a word is split into consonants (c) and vowels (v): a, e, i, o, u are vowels, and so is a y
that follows a consonant; every other character (digits included) is a consonant. The measure m of a
stem is the number of "vc" transitions in that c/v string (the paper's [C](VC)^m[V]).
"""

from __future__ import annotations

__all__ = ["stem"]

_VOWELS = frozenset("aeiou")

# nltk: stems that the rules get wrong, looked up before any rule runs.
_IRREGULAR: dict[str, str] = {
    "sky": "sky",
    "skies": "sky",
    "dying": "die",
    "lying": "lie",
    "tying": "tie",
    "news": "news",
    "innings": "inning",
    "inning": "inning",
    "outings": "outing",
    "outing": "outing",
    "cannings": "canning",
    "canning": "canning",
    "howe": "howe",
    "proceed": "proceed",
    "exceed": "exceed",
    "succeed": "succeed",
}


def _cv(word: str) -> str:
    """The word as a c/v string, one letter per character."""
    out = []
    consonant = False
    for i, ch in enumerate(word):
        if ch in _VOWELS:
            consonant = False
        elif ch == "y":
            # A y is a vowel after a consonant and a consonant otherwise (so also at the start).
            consonant = True if i == 0 else not consonant
        else:
            consonant = True
        out.append("c" if consonant else "v")
    return "".join(out)


def _measure(stem: str) -> int:
    return _cv(stem).count("vc")


def _has_vowel(stem: str) -> bool:
    return "v" in _cv(stem)


def _ends_double_consonant(word: str) -> bool:
    """The paper's *d."""
    return len(word) >= 2 and word[-1] == word[-2] and _cv(word)[-1] == "c"


def _ends_cvc(word: str) -> bool:
    """The paper's *o: ends consonant-vowel-consonant, the last not w, x or y. nltk: a two-letter word
    that is vowel-consonant also counts (any consonant), so "ow"+"ed" and "ag"+"ing" get their e back."""
    if len(word) >= 3:
        return _cv(word)[-3:] == "cvc" and word[-1] not in "wxy"
    return len(word) == 2 and _cv(word) == "vc"


def _step1a(word: str) -> str:
    """Plurals: sses -> ss, ies -> i, ss -> ss, s -> ."""
    if word.endswith("ies"):
        # nltk: a four-letter "-ies" word keeps "ie" ("ties" -> "tie", "dies" -> "die"), unlike "flies".
        return word[:-1] if len(word) == 4 else word[:-2]
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ss"):
        return word
    if word.endswith("s"):
        return word[:-1]
    return word


def _step1b(word: str) -> str:
    """Past tenses and gerunds: (m>0) eed -> ee, (*v*) ed -> , (*v*) ing -> , then tidy the stem."""
    if word.endswith("ied"):
        # nltk: "ied" like "ies" in step 1a ("died" -> "die", "spied" -> "spi"), whatever the stem.
        return word[:-1] if len(word) == 4 else word[:-2]
    if word.endswith("eed"):
        # An "eed" word never falls through to the "ed" rule ("feed" stays "feed").
        return word[:-1] if _measure(word[:-3]) > 0 else word
    if word.endswith("ed") and _has_vowel(word[:-2]):
        stem = word[:-2]
    elif word.endswith("ing") and _has_vowel(word[:-3]):
        stem = word[:-3]
    else:
        return word
    if stem.endswith(("at", "bl", "iz")):
        return stem + "e"  # conflat(ed) -> conflate: lets steps 2-4 see -ate, -ble, -ize
    if _ends_double_consonant(stem):
        return stem if stem[-1] in "lsz" else stem[:-1]  # hopp(ing) -> hop, but fall(ing) -> fall
    if _measure(stem) == 1 and _ends_cvc(stem):
        return stem + "e"  # fil(ing) -> file
    return stem


def _step1c(word: str) -> str:
    """y -> i. nltk: only after a consonant that is not the whole stem ("happy" -> "happi", "enjoy" and
    "by" unchanged), where the paper asks for any vowel in the stem."""
    if word.endswith("y") and len(word) > 2 and _cv(word[:-1])[-1] == "c":
        return word[:-1] + "i"
    return word


# (suffix, replacement) in the order they are tried: the first suffix the word ends with decides, and
# when its condition fails the word is kept (no later, shorter suffix is tried: "rational" stays).
_STEP2: tuple[tuple[str, str], ...] = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),  # the paper has abli -> able; Porter's own later versions (and nltk) use bli -> ble
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("fulli", "ful"),  # nltk
    ("logi", "log"),  # nltk (condition below)
)


def _step2(word: str) -> str:
    """Double suffixes to single ones, when the stem's measure is positive."""
    if word.endswith("alli") and _measure(word[:-4]) > 0:
        # nltk: alli -> al is tried first, and the result goes through step 2 again ("-ationalli").
        return _step2(word[:-2])
    for suffix, replacement in _STEP2:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            # nltk: for logi the l counts with the stem, so short stems like "geo", "theo" qualify.
            measured = word[:-3] if suffix == "logi" else stem
            return stem + replacement if _measure(measured) > 0 else word
    return word


_STEP3: tuple[tuple[str, str], ...] = (
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
)


def _step3(word: str) -> str:
    """-ic-, -full, -ness and the like, when the stem's measure is positive."""
    for suffix, replacement in _STEP3:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if _measure(stem) > 0 else word
    return word


# Order matters as in step 2: "ement" before "ment" before "ent" ("agreement" keeps its "ment" when
# "agre" is too short for "ement", it does not fall back to "ment").
_STEP4: tuple[str, ...] = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism",
    "ate", "iti", "ous", "ive", "ize",
)


def _step4(word: str) -> str:
    """Drop the suffix when the stem's measure is above 1 (-ion only after s or t)."""
    for suffix in _STEP4:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if _measure(stem) > 1 and (suffix != "ion" or stem[-1] in "st"):
                return stem
            return word
    return word


def _step5(word: str) -> str:
    """5a: (m>1) e -> , (m=1 and not *o) e -> ; 5b: (m>1 and *d and *L) -> single letter."""
    if word.endswith("e"):
        stem = word[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _ends_cvc(stem)):
            word = stem
    if word.endswith("ll") and _measure(word[:-1]) > 1:
        word = word[:-1]
    return word


def stem(word: str) -> str:
    """The stem nltk's `PorterStemmer().stem(word)` gives (lowercased, as nltk's default does)."""
    lowered = word.lower()
    irregular = _IRREGULAR.get(lowered)
    if irregular is not None:
        return irregular
    if len(word) <= 2:
        # nltk (and Porter's own code): one- and two-letter words are left alone.
        return lowered
    return _step5(_step4(_step3(_step2(_step1c(_step1b(_step1a(lowered)))))))
