"""match_spans (search.md §11): code-point offsets, casefold widening, budget, strict merge."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from groove_cli.retrieve.spans import match_spans
from groove_cli.text.words import ENGLISH_STOPWORDS


def texts(content: str, spans: list[tuple[int, int]] | None) -> list[str]:
    assert spans is not None
    return [content[a:b] for a, b in spans]


def test_japanese_phrases_and_strict_merge() -> None:
    # Phrases of 再ランキングの評価: 再ランキング, ランキング, の評価.
    content = "本稿では再ランキングの評価を行う。ランキングは重要。"
    #          0 1 2 3 4 5 6 7 8 9 10 ...: 再=4, ランキング=5..10, の評価=10..13, ランキング=17..22
    spans = match_spans("再ランキングの評価", content)
    # (4,10) 再ランキング absorbs (5,10) ランキング (5 < 10);
    # の評価 (10,13) only touches it: kept apart.
    assert spans == [(4, 10), (10, 13), (17, 22)]
    assert texts(content, spans) == ["再ランキング", "の評価", "ランキング"]


def test_offsets_are_code_points() -> None:
    content = "🙂 データベース retry"
    spans = match_spans("retry", content)
    assert spans == [(9, 14)]
    assert content[9:14] == "retry"


def test_case_insensitive() -> None:
    assert match_spans("Retry", "RETRY and retry") == [(0, 5), (10, 15)]


def test_sharp_s_widening() -> None:
    content = "Die Straße ist lang"  # ß is code point 8; it folds to "ss"
    # strasse matches folded [4, 11), which maps back to [4, 10).
    assert match_spans("strasse", content) == [(4, 10)]
    # `se` (no phrase; split into words) matches the second s of ß plus e: widened to [8, 10).
    assert match_spans("se", content) == [(8, 10)]
    # `ss` covers exactly ß.
    assert match_spans("ss", content) == [(8, 9)]
    # A query with ß folds too.
    assert match_spans("straße", "STRASSE") == [(0, 7)]


def test_offsets_after_an_expansion_shift_back() -> None:
    # Folded "ssabc": abc at [2, 5) maps to original [1, 4).
    assert match_spans("abc", "ßabc") == [(1, 4)]


def test_final_sigma() -> None:
    # casefold maps both σ and ς to σ.
    assert match_spans("σας", "ΣΑΣ") == [(0, 3)]


def test_words_when_no_phrase() -> None:
    # "UI と ML" has no phrase of 3+: its whitespace-split words are used.
    content = "The UI と the ML"
    assert texts(content, match_spans("UI と ML", content)) == ["UI", "と", "ML"]


def test_omitted_and_empty() -> None:
    assert match_spans("", "abc") is None
    assert match_spans("   ", "abc") is None
    assert match_spans("xyz", "abc") == []
    assert match_spans("xyz", "") == []


def test_content_size_limit_in_bytes() -> None:
    assert match_spans("aaa", "a" * 262_144) is not None
    assert match_spans("aaa", "a" * 262_145) is None
    # 87,382 hiragana are 262,146 UTF-8 bytes: omitted, although far fewer code points.
    assert match_spans("あああ", "あ" * 87_382) is None
    assert match_spans("あああ", "あ" * 87_381) is not None  # 262,143 bytes


def test_budget_per_term() -> None:
    # Two terms: budget = 100 // 2 = 50 occurrences each.
    content = "abc " * 60
    spans = match_spans("abc xyz", content)
    assert spans == [(4 * i, 4 * i + 3) for i in range(50)]


def test_occurrences_do_not_overlap() -> None:
    # "aaa" in "aaaaaaa": matches at 0 and 3 (each search resumes at the previous end), which
    # touch and stay separate.
    assert match_spans("aaa", "aaaaaaa") == [(0, 3), (3, 6)]


def test_at_most_100_terms_budget_one() -> None:
    # 150 two-letter words: no phrase, so 150 split terms; sorted, the first 100 are kept and
    # each gets budget max(1, 100 // 100) = 1 (stopwords such as `an` are left out: never terms).
    pairs = (chr(97 + i // 26) + chr(97 + i % 26) for i in range(26 * 26))
    words = [w for w in pairs if w not in ENGLISH_STOPWORDS][:150]
    content = " ".join(words) + " " + " ".join(words)
    spans = match_spans(" ".join(reversed(words)), content)
    assert spans == [(3 * i, 3 * i + 2) for i in range(100)]


def test_duplicate_terms_after_folding() -> None:
    # Three phrases, one folded term: budget 100, not 33.
    content = "retry " * 40
    spans = match_spans("Retry retry RETRY", content)
    assert spans is not None and len(spans) == 40


def test_overlapping_terms_merge() -> None:
    # "budget" and "get limit" overlap on "get": merged into one span.
    content = "the budget limit"
    assert match_spans('budget "get limit"', content) == [(4, 16)]


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=12), st.text(max_size=80))
def test_spans_sorted_disjoint_in_range(query: str, content: str) -> None:
    spans = match_spans(query, content)
    if not query.strip():
        assert spans is None
        return
    assert spans is not None
    assert len(spans) <= 100
    previous_end = -1
    for start, end in spans:
        assert 0 <= start < end <= len(content)
        assert start >= previous_end
        previous_end = end


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("aßSsẞİıΣσςﬁFI "), max_size=30))
def test_every_span_folds_to_contain_a_term(content: str) -> None:
    # With special folds present, the slow path runs; each span must fold to contain "ss" or
    # "fi" (the two query words here, neither a phrase).
    spans = match_spans("ss fi", content)
    assert spans is not None
    for start, end in spans:
        folded = content[start:end].casefold()
        assert "ss" in folded or "fi" in folded


def test_stopwords_are_not_highlighted() -> None:
    # issue 28: `the` lit up three times in a hit for "the retry budget"
    content = "Set the retry budget in the config; the rest stays."
    spans = match_spans("the retry budget", content)
    assert texts(content, spans) == ["retry", "budget"]
    # a query of stopwords only still highlights them
    assert texts("the end", match_spans("the", "the end")) == ["the"]
