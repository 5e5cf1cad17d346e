"""The word-level full-text query: Latin-script words for the `fts_words` table.

The trigram table has no word boundaries, stemming or stopwords, which costs English queries
dearly (on CISI far below a stemmed, stopword-aware BM25: bench/results/code-notes.md#word-leg). Latin
words therefore go to a second FTS5 table tokenised by `porter unicode61` (stemming happens inside
FTS5, on both the rows and the query terms); CJK phrases stay on the trigram table.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

MAX_WORD_TERMS = 32
MIN_WORD_CHARS = 2

# The standard English stopword list of NLTK (179 words), the list BM25 baselines such as bm25s
# use; dropped from queries unless quoted or unless the query is nothing but stopwords.
_STOPWORD_TEXT = """
a about above after again against ain all am an and any are aren aren't as at be because been
before being below between both but by can couldn couldn't d did didn didn't do does doesn doesn't
doing don don't down during each few for from further had hadn hadn't has hasn hasn't have haven
haven't having he her here hers herself him himself his how i if in into is isn isn't it it's its
itself just ll m ma me mightn mightn't more most mustn mustn't my myself needn needn't no nor not
now o of off on once only or other our ours ourselves out over own re s same shan shan't she she's
should should've shouldn shouldn't so some such t than that that'll the their theirs them
themselves then there these they this those through to too under until up ve very was wasn wasn't
we were weren weren't what when where which while who whom why will with won won't wouldn
wouldn't y you you'd you'll you're you've your yours yourself yourselves
"""
ENGLISH_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_WORD = re.compile(r"[^\W_]+(?:['’_\-][^\W_]+)*")


def is_latin_letter(ch: str) -> bool:
    """A letter of the Latin script (ASCII or accented; not full-width forms)."""
    return ch.isalpha() and unicodedata.name(ch, "").startswith("LATIN ")


def is_latin_text(text: str) -> bool:
    """True when `text` has a Latin letter and every letter in it is Latin (digits and
    punctuation allowed). Numbers alone are not Latin words: they stay on the trigram table."""
    has_letter = False
    for ch in text:
        if ch.isalpha():
            if not is_latin_letter(ch):
                return False
            has_letter = True
    return has_letter


def latin_words(text: str) -> list[str]:
    """Latin-script words of plain text, in order; other scripts act as separators and tokens
    without a Latin letter (numbers) are left out."""
    latin_only = "".join(ch if not ch.isalpha() or is_latin_letter(ch) else " " for ch in text)
    return [m.group(0) for m in _WORD.finditer(latin_only) if is_latin_text(m.group(0))]


def select_terms(candidates: Sequence[tuple[str, bool]]) -> tuple[tuple[str, ...], bool]:
    """Word-table terms from (term, quoted) pairs in query order.

    Quoted terms are kept as they are; plain words shorter than 2 characters are dropped, and
    so are stopwords unless the query has nothing but stopwords. A word repeated in the query
    stays repeated: FTS5's bm25 sums over the OR-ed phrases, so repetition is BM25's query term
    frequency (better on CISI than removing repeats: bench/results/code-notes.md#word-leg). At most 32
    terms are kept; the flag says whether the cap dropped a distinct term (one not kept in any
    case), as the phrase cap's warning promises (search.md §2.4) — cut repeats are not worth it.
    """
    usable = [(t, q) for t, q in candidates if q or len(t) >= MIN_WORD_CHARS]
    kept = [t for t, q in usable if q or t.casefold() not in ENGLISH_STOPWORDS]
    if not kept:
        kept = [t for t, _ in usable]
    terms = tuple(kept[:MAX_WORD_TERMS])
    searched = {t.casefold() for t in terms}
    return terms, any(t.casefold() not in searched for t in kept[MAX_WORD_TERMS:])


def dedupe_cap(terms: Sequence[str]) -> tuple[tuple[str, ...], bool]:
    """Case-insensitive dedupe (first occurrence wins), capped at 32."""
    seen: set[str] = set()
    unique: list[str] = []
    for term in terms:
        key = term.casefold()
        if key not in seen:
            seen.add(key)
            unique.append(term)
    return tuple(unique[:MAX_WORD_TERMS]), len(unique) > MAX_WORD_TERMS


def quote(term: str) -> str:
    """An FTS5 string: `"` + term with `"` doubled + `"`."""
    return '"' + term.replace('"', '""') + '"'


def or_expr(terms: Sequence[str]) -> str:
    return " OR ".join(quote(t) for t in terms)


def match_expression(positives: Sequence[str], negatives: Sequence[str]) -> str | None:
    """`"a" OR "b"`, or `("a" OR …) NOT ("n" OR …)`; None without positives."""
    if not positives:
        return None
    if not negatives:
        return or_expr(positives)
    return f"({or_expr(positives)}) NOT ({or_expr(negatives)})"
