"""Query parsing and FTS5 compilation (search.md §2).

The FTS leg uses the trigram tokenizer, which cannot match fewer than 3 characters, and FTS5
gives its own meaning to `AND`, `OR`, `NOT`, `NEAR`, `column:` and bare punctuation. So the query
is never passed through as typed: it is cut into phrases of at least 3 code points, each quoted
for FTS5, and OR-ed together. `-term` and `-"phrase"` exclusions are cut out first and compiled
into a `NOT` clause (FTS leg) and an id scan (vector leg). Everything here is pure; the
pipeline prints the cap warnings from the flags of `CompiledQuery`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

from groove_cli.errors import UsageError
from groove_cli.text import NOT_UTF8_HINT, cjk, not_utf8
from groove_cli.text.words import (
    MIN_WORD_CHARS,
    dedupe_cap,
    is_latin_text,
    latin_words,
    match_expression,
    or_expr,
    select_terms,
)

MIN_PHRASE_CHARS = 3
# In a query with a non-Latin phrase (a number, another script) a lone Latin token (a unit such
# as "km", a single name) is served by the trigram match; the word-level leg joins only from 2
# Latin words on (on JSQuAD, before the CJK table, closer to no word leg than a word leg for every
# Latin token: bench/results/code-notes.md#mixed-queries). A query with CJK text never runs it.
MIN_MIXED_WORD_TERMS = 2
MAX_PHRASES = 32
MAX_NEG_PHRASES = 32
MAX_CJK_TERMS = 256
"""CJK-table tokens searched per query: about two per character, so a 130-character question
fits (the longest of 1,000 JSQuAD questions has 98)."""
FTS_QUERY_VERSION = 5
"""2: Latin words go to fts_words; 3: CJK text also goes to fts_cjk; 4: hiragana-only bigrams
are left out of the CJK terms like hiragana unigrams; 5: a query with CJK text leaves its Latin
words and its one-token identifiers to the CJK table (no word-level leg, no `2012` phrase)."""

EMPTY_QUERY = "the query is empty"
ONLY_EXCLUSIONS = (
    "the query contains only exclusions (-term); add at least one term to search for"
)

_KANJI, _HIRAGANA, _KATAKANA, _OTHER_WORD, _SEPARATOR = range(5)


@dataclass(frozen=True, slots=True)
class CompiledQuery:
    """A query split into what the legs need.

    `phrases` are the positive phrases before the fallback (deduplicated, capped);
    `match_expr` is None when the FTS leg cannot run; `negative_expr` is the vector leg's
    exclusion scan, None without exclusions.
    """

    text: str
    positive_text: str
    phrases: tuple[str, ...]
    negatives: tuple[str, ...]
    match_expr: str | None
    """The trigram table's expression: CJK (non-Latin) phrases only."""
    negative_expr: str | None
    phrases_capped: bool
    negatives_capped: bool
    word_terms: tuple[str, ...] = ()
    """Latin-script words and quoted Latin phrases for the word-level table."""
    word_expr: str | None = None
    word_negative_expr: str | None = None
    cjk_terms: tuple[str, ...] = ()
    """Tokens (text/cjk.py) of a query with CJK text, for the CJK table; repeats kept."""
    cjk_expr: str | None = None
    cjk_negative_expr: str | None = None
    """Exclusions the trigram table cannot hold (shorter than 3 characters) that are one CJK
    token: `-評価` and `-"評"` exclude every chunk containing 評価 / 評, on every leg."""


@dataclass(frozen=True, slots=True)
class _Segment:
    """A Plain or Quoted stretch of the query; `start`/`end` index the scanned text."""

    kind: Literal["plain", "quoted"]
    start: int
    end: int
    content: str


def _segments(text: str) -> list[_Segment]:
    """Cut `text` into Plain and Quoted segments (§2.1).

    Inside quotes `""` is a literal `"` and a lone `"` closes; an unclosed quote makes the rest
    of the input, quote included, one Plain segment.
    """
    segments: list[_Segment] = []
    n = len(text)
    plain_start = 0
    i = text.find('"')
    while i != -1:
        parts: list[str] = []
        j = i + 1
        closed = False
        while True:
            k = text.find('"', j)
            if k == -1:
                break
            parts.append(text[j:k])
            if k + 1 < n and text[k + 1] == '"':
                parts.append('"')
                j = k + 2
                continue
            closed = True
            j = k
            break
        if not closed:
            break
        if plain_start < i:
            segments.append(_Segment("plain", plain_start, i, text[plain_start:i]))
        segments.append(_Segment("quoted", i, j + 1, "".join(parts)))
        plain_start = j + 1
        i = text.find('"', plain_start)
    if i != -1 and plain_start < i:
        # The text before an unclosed quote, then the unclosed tail as its own Plain segment.
        segments.append(_Segment("plain", plain_start, i, text[plain_start:i]))
        plain_start = i
    if plain_start < n:
        segments.append(_Segment("plain", plain_start, n, text[plain_start:]))
    return segments


def _char_class(ch: str) -> int:
    """The §2.3 class of one code point; the CJK classes are tested before `isalnum`."""
    cp = ord(ch)
    if (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
        or cp in (0x3005, 0x3006)
    ):
        return _KANJI
    if 0x3041 <= cp <= 0x309F:
        return _HIRAGANA
    if 0x30A1 <= cp <= 0x30FF or 0xFF66 <= cp <= 0xFF9F:
        return _KATAKANA
    if ch.isalnum() or ch == "_" or ch == "-":
        return _OTHER_WORD
    return _SEPARATOR


def _is_word_char(ch: str) -> bool:
    return _char_class(ch) != _SEPARATOR


def _runs(group: str) -> list[str]:
    """Split a separator-free group into maximal runs of one character class."""
    runs: list[str] = []
    start = 0
    current = _char_class(group[0])
    for i in range(1, len(group)):
        cls = _char_class(group[i])
        if cls != current:
            runs.append(group[start:i])
            start, current = i, cls
    runs.append(group[start:])
    return runs


def _group_phrases(group: str) -> list[str]:
    """Emit one group's phrases (§2.4)."""
    runs = _runs(group)
    offsets: list[int] = []
    pos = 0
    for run in runs:
        offsets.append(pos)
        pos += len(run)
    phrases: list[str] = []
    last_unit: int | None = None  # index into `phrases` of the last unit
    last_start = 0  # offset in `group` where the last unit begins
    i = 0
    while i < len(runs):
        if len(runs[i]) >= MIN_PHRASE_CHARS:
            phrases.append(runs[i])
            last_unit, last_start = len(phrases) - 1, offsets[i]
            i += 1
            continue
        j, joined = i, 0
        while j < len(runs) and joined < MIN_PHRASE_CHARS:
            joined += len(runs[j])
            j += 1
        if joined >= MIN_PHRASE_CHARS:
            phrases.append("".join(runs[i:j]))
            last_unit, last_start = len(phrases) - 1, offsets[i]
            if j - i > 1 and len(runs[j - 1]) >= MIN_PHRASE_CHARS:
                phrases.append(runs[j - 1])
            i = j
            continue
        # Short runs at the group end that cannot reach 3 widen the last unit.
        if last_unit is not None:
            old = phrases[last_unit]
            phrases[last_unit] = group[last_start:]
            phrases.insert(last_unit + 1, old)
        break
    return phrases


def _plain_phrases(text: str) -> list[str]:
    """Phrases of one Plain segment: groups at separators, runs by class (§2.3–2.4)."""
    phrases: list[str] = []
    start: int | None = None
    for i, ch in enumerate(text):
        if _char_class(ch) == _SEPARATOR:
            if start is not None:
                phrases.extend(_group_phrases(text[start:i]))
                start = None
        elif start is None:
            start = i
    if start is not None:
        phrases.extend(_group_phrases(text[start:]))
    return phrases


def _quoted_phrase_ok(content: str) -> bool:
    return len(content) >= MIN_PHRASE_CHARS and "\0" not in content


def _dedupe_cap(phrases: list[str], cap: int) -> tuple[tuple[str, ...], bool]:
    """Deduplicate keeping first occurrences, keep the first `cap`; report whether any dropped."""
    unique = list(dict.fromkeys(phrases))
    return tuple(unique[:cap]), len(unique) > cap


def _positive_phrases(segments: list[_Segment]) -> list[str]:
    phrases: list[str] = []
    for seg in segments:
        if seg.kind == "quoted":
            if _quoted_phrase_ok(seg.content):
                phrases.append(seg.content)
        else:
            phrases.extend(_plain_phrases(seg.content))
    return phrases


def query_phrases(text: str) -> list[str]:
    """The positive phrases of `text` before the fallback, deduplicated and capped at 32.

    `text` is taken as positive text: no exclusion processing. Reused by `match_spans`.
    """
    phrases, _ = _dedupe_cap(_positive_phrases(_segments(text)), MAX_PHRASES)
    return list(phrases)


def _fts_phrase(phrase: str) -> str:
    """An FTS5 string: `"` + phrase with `"` doubled + `"`."""
    return '"' + phrase.replace('"', '""') + '"'


def _or(phrases: tuple[str, ...]) -> str:
    return " OR ".join(_fts_phrase(p) for p in phrases)


def _exclusions(text: str, segments: list[_Segment]
                ) -> tuple[list[tuple[int, int]], list[str], list[str], list[str]]:
    """Find exclusion markers (§2.2): the spans to cut out, the negative phrases, the
    excluded Latin words (for the word-level table) and the short excluded terms that are one
    CJK-table token, in order."""
    removals: list[tuple[int, int]] = []
    negatives: list[str] = []
    negative_words: list[str] = []
    negative_tokens: list[str] = []
    for k, seg in enumerate(segments):
        if seg.kind != "plain":
            continue
        p = seg.start
        while p < seg.end:
            if text[p] != "-" or (p > 0 and not text[p - 1].isspace()):
                p += 1
                continue
            nxt = p + 1
            if nxt < seg.end:
                if text[nxt] != "-" and _is_word_char(text[nxt]):
                    end = nxt
                    while end < seg.end and not text[end].isspace() and text[end] != '"':
                        end += 1
                    negatives.extend(_plain_phrases(text[nxt:end]))
                    negative_tokens.extend(_short_token(text[nxt:end]))
                    negative_words.extend(w for w in latin_words(text[nxt:end])
                                          if len(w) >= MIN_WORD_CHARS)
                    removals.append((p, end))
                    p = end
                    continue
            elif k + 1 < len(segments) and segments[k + 1].kind == "quoted":
                quoted = segments[k + 1]
                if _quoted_phrase_ok(quoted.content):
                    negatives.append(quoted.content)
                negative_tokens.extend(_short_token(quoted.content))
                if is_latin_text(quoted.content) and "\0" not in quoted.content:
                    negative_words.append(quoted.content)
                removals.append((p, quoted.end))
            p += 1
    return removals, negatives, negative_words, negative_tokens


def _short_token(term: str) -> list[str]:
    """A CJK-table exclusion for a term the trigram table cannot hold (< 3 characters) that is
    exactly one token there: a 1- or 2-character CJK word or a short number."""
    norm = cjk.normalise(term.strip())
    if not norm or len(norm) >= MIN_PHRASE_CHARS:
        return []
    if all(cjk.is_cjk(ch) for ch in norm):
        return [norm]  # 評 is a unigram token, 評価 a bigram token of every text holding it
    return [norm] if norm.isdigit() and cjk.tokens(norm) == [norm] else []


def _is_hiragana_token(token: str) -> bool:
    """A CJK-table token of hiragana only: a particle, an ending or a piece of two of them."""
    return all(0x3041 <= ord(ch) <= 0x309F for ch in token)


def _cjk_terms(segments: list[_Segment]) -> tuple[tuple[str, ...], bool]:
    """The CJK table's terms of a query that holds CJK text, and whether the cap cut any.

    Every token of its plain text in order, repeats kept (BM25's query term frequency), except
    hiragana-only tokens: single hiragana (particles and endings such as の, は, た) and pairs of
    them (とき, きた, ので). Nearly every chunk holds them, so they cost the most to score, and
    they rank chunks by the grammar they share with the question, not its words: on the sample
    KB `障害が起きたときの連絡手順` found a review note that "起きたとき" first, above the incident
    runbook. On JSQuAD dropping them leaves nDCG@10 within noise and saves CPU
    (bench/results/code-notes.md#hiragana). A query made only of them keeps them, and so does a
    quoted one (`"とき"`). A quoted phrase asks for exactly that text: of 3+ characters it stays
    on the trigram table alone, of 1–2 CJK characters it is the one token that matches it here.
    """
    if not any(cjk.has_cjk(seg.content) for seg in segments):
        return (), False
    found: list[tuple[str, bool]] = []  # (token, quoted)
    for seg in segments:
        if seg.kind == "plain":
            found.extend((t, False) for t in cjk.tokens(seg.content))
        else:
            found.extend((t, True) for t in _short_token(seg.content))
    terms = ([t for t, quoted in found if quoted or not _is_hiragana_token(t)]
             or [t for t, _ in found])
    kept = terms[:MAX_CJK_TERMS]
    return tuple(kept), bool(set(terms[MAX_CJK_TERMS:]) - set(kept))


def _split_identifiers(phrases: tuple[str, ...]) -> list[str]:
    """The phrases of a query with CJK text that stay on the trigram table besides its quoted
    ones: identifiers without CJK that hold a digit and that the CJK table cuts into several
    tokens (`BK-1107` is `bk` + `1107` there), so the trigram's exact substring adds the order
    the CJK tokens lose. A number or word the CJK table holds as one token (`2012`, `ISW13HT`)
    stays there alone: a second leg ranking the chunks that hold only that token outvotes the
    CJK leg's ranking of the whole question (bench/results/suite_fts.md)."""
    return [p for p in phrases if not cjk.has_cjk(p) and any(ch.isdigit() for ch in p)
            and len(cjk.tokens(p)) > 1]


@functools.lru_cache(maxsize=4096)
def ignored_symbols(query: CompiledQuery) -> tuple[str, ...]:
    """The query's punctuation-only terms (`?`, `->`, a quoted `"::"`) that no full-text leg
    searches: no letter, digit or CJK character, and not in the trigram expression (which does
    search a run of 3 or more symbols, `&&&`). The search says so by name (search.md §2)."""
    terms: list[str] = []
    for seg in _segments(query.positive_text):
        parts = [seg.content.strip()] if seg.kind == "quoted" else seg.content.split()
        terms += [t for t in parts if t and not any(
            ch.isalnum() or (_char_class(ch) != _OTHER_WORD and _is_word_char(ch)) for ch in t)]
    searched = query.match_expr or ""
    return tuple(dict.fromkeys(t for t in terms if f'"{t}' not in searched
                               and f"{t}\"" not in searched and t not in searched))


def compile_query(text: str) -> CompiledQuery:
    """Compile a query into phrases, negatives and the FTS5 MATCH expressions (§2).

    Raises:
        UsageError: the query is empty or whitespace-only, made only of exclusions, or not
            valid UTF-8 text.
    """
    if not text.strip():
        raise UsageError(EMPTY_QUERY)
    invalid = not_utf8("the query", text)
    if invalid:
        raise UsageError(invalid, NOT_UTF8_HINT)
    segments = _segments(text)
    removals, negative_list, negative_word_list, negative_tokens = _exclusions(text, segments)
    pieces: list[str] = []
    cursor = 0
    for start, end in removals:
        pieces.append(text[cursor:start])
        cursor = end
    pieces.append(text[cursor:])
    positive_text = "".join(pieces).strip()
    if removals and not positive_text:
        raise UsageError(ONLY_EXCLUSIONS)

    positive_segments = _segments(positive_text)
    phrases, phrases_capped = _dedupe_cap(_positive_phrases(positive_segments), MAX_PHRASES)
    negatives, negatives_capped = _dedupe_cap(negative_list, MAX_NEG_PHRASES)

    # Routing by script (issues #8, #13, #25): a query with CJK text goes to the CJK table,
    # which holds its Latin words and numbers as tokens too; only its quoted phrases and the
    # identifiers the CJK tokens split (`BK-1107`: `bk` + `1107`; substrings) stay on the
    # trigram table, and the word-level leg does not run (its unicode61 tokens cannot see a
    # Latin word glued to Japanese text: `NTTドコモ` is one token there). An all-Latin query
    # sends its words to the word-level table only; other queries with a non-Latin phrase
    # (numbers, identifiers) keep every phrase on the trigram table.
    has_cjk = any(cjk.has_cjk(seg.content) for seg in positive_segments)
    cjk_terms, cjk_capped = _cjk_terms(positive_segments)
    mixed = any(not is_latin_text(p) for p in phrases)
    positive: tuple[str, ...] = phrases if mixed else ()
    if has_cjk:
        quoted = [s.content for s in positive_segments
                  if s.kind == "quoted" and _quoted_phrase_ok(s.content)]
        positive = tuple(dict.fromkeys([*quoted, *_split_identifiers(phrases)]))
    if not phrases and not has_cjk:
        plain = "".join(s.content for s in positive_segments if s.kind == "plain").strip()
        if _quoted_phrase_ok(plain):
            positive = (plain,)

    word_candidates: list[tuple[str, bool]] = []
    for seg in positive_segments:
        if seg.kind == "quoted":
            if is_latin_text(seg.content) and "\0" not in seg.content:
                word_candidates.append((seg.content, True))
        else:
            word_candidates.extend((w, False) for w in latin_words(seg.content))
    word_terms, words_capped = select_terms(word_candidates)
    if has_cjk or (mixed and len(word_terms) < MIN_MIXED_WORD_TERMS):
        word_terms, words_capped = (), False
    word_negatives, word_negatives_capped = dedupe_cap(negative_word_list)

    negative_expr = _or(negatives) if negatives else None
    cjk_negatives = tuple(dict.fromkeys(negative_tokens))[:MAX_NEG_PHRASES]
    return CompiledQuery(
        text=text,
        positive_text=positive_text,
        phrases=phrases,
        negatives=negatives,
        match_expr=match_expression(positive, negatives),
        negative_expr=negative_expr,
        phrases_capped=(cjk_capped if has_cjk else phrases_capped) or words_capped,
        negatives_capped=negatives_capped or word_negatives_capped,
        word_terms=word_terms,
        word_expr=match_expression(word_terms, word_negatives),
        word_negative_expr=or_expr(word_negatives) if word_negatives else None,
        cjk_terms=cjk_terms,
        cjk_expr=or_expr(cjk_terms) if cjk_terms else None,
        cjk_negative_expr=or_expr(cjk_negatives) if cjk_negatives else None,
    )
