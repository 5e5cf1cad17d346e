"""Frontmatter, titles, chunking, breadcrumbs and quality scores (index.md §2–§4)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from groove_cli.chunk import (
    CHUNKER_VERSION,
    ChunkDraft,
    ChunkRules,
    build_context,
    category_topic,
    chunk_markdown,
    chunker_fingerprint,
    derive_title,
    estimate_tokens,
    is_boilerplate,
    parse_document,
    parse_frontmatter,
    quality_score,
    split_frontmatter,
)

LONG_EN = "This paragraph is long enough that it will never be merged into another chunk."
LONG_JA = (
    "この段落は十分に長いので、前のチャンクに結合されることはありません。"
    "検索の単位として独立して残ります。"
)

assert len(LONG_EN) >= 50 and len(LONG_JA) >= 50


def contents(body: str, exclude: tuple[str, ...] = (), title: str | None = "T") -> list[str]:
    return [chunk.content for chunk in chunk_markdown(body, title, ChunkRules(
        exclude_headings=exclude))]


def headings(body: str, exclude: tuple[str, ...] = ()) -> list[str | None]:
    return [chunk.heading for chunk in chunk_markdown(body, "T", ChunkRules(
        exclude_headings=exclude))]


# --- fingerprint -------------------------------------------------------------------------------


def test_fingerprint_is_sha256_of_json_version_and_every_rule() -> None:
    expected = hashlib.sha256(
        b'[3, ["Draft", "\\u30e1\\u30e2"], [2, 3, 4, 5, 6], 700, false]').hexdigest()
    assert CHUNKER_VERSION == 3
    assert chunker_fingerprint(ChunkRules(exclude_headings=("メモ", "Draft"))) == expected
    assert chunker_fingerprint(ChunkRules(exclude_headings=("Draft", "メモ"))) == expected


def test_fingerprint_changes_with_each_rule() -> None:
    default = chunker_fingerprint(ChunkRules())
    assert default == hashlib.sha256(
        json.dumps([3, [], [2, 3, 4, 5, 6], 700, False]).encode()).hexdigest()
    others = {chunker_fingerprint(rules) for rules in (
        ChunkRules(exclude_headings=("Scratch",)), ChunkRules(heading_levels=(2, 3)),
        ChunkRules(max_tokens=200), ChunkRules(html_comments=True))}
    assert len(others) == 4 and default not in others


# --- §2 split_frontmatter ----------------------------------------------------------------------


def test_split_basic() -> None:
    assert split_frontmatter("---\ntitle: A\n---\nbody\n") == ("title: A", "body\n")


def test_split_strips_bom_before_and_without_frontmatter() -> None:
    assert split_frontmatter("\ufeff---\ntitle: A\n---\nbody") == ("title: A", "body")
    assert split_frontmatter("\ufeffno frontmatter") == (None, "no frontmatter")


def test_split_crlf() -> None:
    yaml_text, body = split_frontmatter("---\r\ntitle: A\r\ntags: x\r\n---\r\n\r\nbody\r\n")
    assert yaml_text == "title: A\r\ntags: x\r"
    assert body == "body\r\n"
    assert parse_frontmatter(yaml_text, "a.md").tags == ("x",)


def test_split_without_closing_marker_is_all_body() -> None:
    text = "---\ntitle: A\nbody without a closing line\n"
    assert split_frontmatter(text) == (None, text)


def test_split_body_leading_newlines_stripped() -> None:
    assert split_frontmatter("---\na: b\n---\n\n\n## H\n") == ("a: b", "## H\n")


def test_split_empty_yaml() -> None:
    assert split_frontmatter("---\n\n---\nbody") == ("", "body")


def test_split_closing_must_follow_a_newline() -> None:
    # The search for "\n---" starts after the opening line, so "---\n---" has no closing marker.
    assert split_frontmatter("---\n---\nbody") == (None, "---\n---\nbody")


def test_split_closing_marker_matches_longer_runs_too() -> None:
    # The body starts right after the four characters "\n---".
    assert split_frontmatter("---\na: 1\n-----\nbody") == ("a: 1", "--\nbody")


def test_split_text_not_starting_with_dashes() -> None:
    assert split_frontmatter(" ---\na: 1\n---\n") == (None, " ---\na: 1\n---\n")


# --- §2 parse_frontmatter ----------------------------------------------------------------------


def test_base_loader_keeps_source_text() -> None:
    front = parse_frontmatter(
        "title: yes\ndepth: 01\ndate: 2024-01-05\ntopic: 1.50\ntags: [on, 007]", "n.md"
    )
    assert front.title == "yes"
    assert front.depth == "01"
    assert front.date == "2024-01-05"
    assert front.topic == "1.50"
    assert front.tags == ("on", "007")
    assert front.warnings == ()


def test_tags_scalar_becomes_list_and_empty_is_none() -> None:
    assert parse_frontmatter("tags: 日本語", "n.md").tags == ("日本語",)
    assert parse_frontmatter("tags:", "n.md").tags == ()
    assert parse_frontmatter("title: x", "n.md").tags == ()
    assert parse_frontmatter("tags:\n  - a\n  - b", "n.md").tags == ("a", "b")


def test_empty_yaml_and_comments_have_no_fields() -> None:
    for text in ("", "# only a comment", "\n\n"):
        front = parse_frontmatter(text, "n.md")
        assert (front.title, front.tags, front.warnings) == (None, (), ())


def test_category_key_and_unknown_keys_ignored() -> None:
    doc = parse_document("---\ncategory: other\nauthor: me\n---\nbody", "cat/note.md")
    assert doc.category == "cat"
    assert doc.warnings == ()


def test_yaml_error_empties_all_fields() -> None:
    front = parse_frontmatter("title: Good\ntags: [a, b\n", "dir/n.md")
    assert (front.title, front.tags) == (None, ())
    assert len(front.warnings) == 1
    assert front.warnings[0].startswith("failed to parse YAML frontmatter in dir/n.md: ")
    assert "flow sequence" in front.warnings[0]


def test_non_mapping_yaml_empties_all_fields() -> None:
    front = parse_frontmatter("- a\n- b", "n.md")
    assert front.title is None
    assert front.warnings == (
        "failed to parse YAML frontmatter in n.md: expected a mapping at the top level, "
        "got a sequence",
    )
    scalar = parse_frontmatter("just text", "n.md")
    assert scalar.warnings == (
        "failed to parse YAML frontmatter in n.md: expected a mapping at the top level, "
        "got a scalar",
    )


def test_wrong_type_empties_only_that_field() -> None:
    front = parse_frontmatter("title: {a: b}\ntopic: [x]\ndepth: 2\ntags: [ok]", "n.md")
    assert (front.title, front.topic, front.depth, front.tags) == (None, None, "2", ("ok",))
    assert front.warnings == (
        'failed to parse YAML frontmatter in n.md: field "title" must be a scalar, got a mapping',
        'failed to parse YAML frontmatter in n.md: field "topic" must be a scalar, '
        "got a sequence",
    )


def test_nested_collection_in_tags_empties_tags() -> None:
    front = parse_frontmatter("title: A\ntags: [a, [b]]", "n.md")
    assert (front.title, front.tags) == ("A", ())
    assert front.warnings == (
        'failed to parse YAML frontmatter in n.md: field "tags" must be a list of scalars, '
        "got a nested collection",
    )
    mapping = parse_frontmatter("tags: {a: b}", "n.md")
    assert mapping.tags == ()
    assert "got a mapping" in mapping.warnings[0]


def test_empty_scalar_counts_as_absent() -> None:
    front = parse_frontmatter('title:\ntopic: ""', "n.md")
    assert (front.title, front.topic, front.warnings) == (None, None, ())


def test_crlf_yaml_is_normalised() -> None:
    front = parse_frontmatter("title: A\r\ndate: 2024\r\n", "n.md")
    assert (front.title, front.date) == ("A", "2024")


# --- §2.4 titles -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "title"),
    [
        ("notes/my-first_note.md", "my first note"),
        ("Backup--Schedule.md", "Backup Schedule"),
        ("a/b/v1.2.notes.md", "v1.2.notes"),
        ("a/.hidden", ".hidden"),
        ("a/.hidden.md", ".hidden"),
        ("README", "README"),
        ("日本語_メモ-一覧.md", "日本語 メモ 一覧"),
        ("a/ spaced  _ name .txt", "spaced name"),
    ],
)
def test_derive_title(rel: str, title: str) -> None:
    assert derive_title(rel) == title


def test_breadcrumb_uses_frontmatter_title_else_file_name() -> None:
    with_title = parse_document(f"---\ntitle: 見出し\n---\n{LONG_EN}", "a/b-c.md")
    assert with_title.title == "見出し"
    assert with_title.chunks[0].context_text == "見出し"
    blank = parse_document(f"---\ntitle: '   '\n---\n{LONG_EN}", "a/b-c.md")
    assert blank.title == "b c"
    assert blank.chunks[0].context_text == "b c"
    none = parse_document(LONG_EN, "a/b-c.md")
    assert none.title == "b c"
    assert none.chunks[0].context_text == "b c"


def test_title_is_frontmatter_else_first_heading_of_any_level_else_file_name() -> None:
    assert parse_document(f"---\ntitle: Given\n---\n## Sub\n{LONG_EN}", "x.md").title == "Given"
    assert parse_document(f"intro\n\n```\n# not it\n```\n### Third level\n{LONG_EN}\n# Later",
                          "x.md").title == "Third level"
    assert parse_document(f"#### Deep first #\n{LONG_EN}", "x.md").title == "Deep first"
    assert parse_document(LONG_EN, "notes/my_note.md").title == "my note"


# --- §3 code fences ----------------------------------------------------------------------------


def test_heading_inside_backtick_fence_is_body() -> None:
    body = f"## Real\n{LONG_EN}\n```python\n## not a heading\n```\n### After\n{LONG_EN}"
    assert headings(body) == ["Real", "After"]
    assert "## not a heading" in contents(body)[0]


def test_heading_inside_tilde_fence_is_body() -> None:
    body = f"## Real\n{LONG_JA}\n~~~\n## コード内\n~~~\n## After\n{LONG_JA}"
    assert headings(body) == ["Real", "After"]


def test_closing_fence_may_be_longer_but_not_shorter() -> None:
    body = f"## A\n{LONG_EN}\n````\n```\n## inside\n`````  \n## B\n{LONG_EN}"
    assert headings(body) == ["A", "B"]
    assert "## inside" in contents(body)[0]


def test_other_fence_character_does_not_close() -> None:
    body = f"## A\n{LONG_EN}\n~~~\n```\n## inside\n~~~\n## B\n{LONG_EN}"
    assert headings(body) == ["A", "B"]


def test_closing_fence_with_text_does_not_close() -> None:
    body = f"## A\n{LONG_EN}\n```\n``` not closed\n## inside\n```\n## B\n{LONG_EN}"
    assert headings(body) == ["A", "B"]


def test_unclosed_fence_runs_to_end() -> None:
    body = f"## A\n{LONG_EN}\n```\n## inside\n### also inside"
    assert headings(body) == ["A"]
    assert contents(body)[0].endswith("```\n## inside\n### also inside")


def test_backtick_info_string_with_backtick_is_not_a_fence() -> None:
    body = f"## A\n{LONG_EN}\n``` a`b\n## B\n{LONG_EN}"
    assert headings(body) == ["A", "B"]


def test_tilde_info_string_may_contain_backticks() -> None:
    body = f"## A\n{LONG_EN}\n~~~ a`b\n## inside\n~~~\n## B\n{LONG_EN}"
    assert headings(body) == ["A", "B"]


def test_fence_indent_limit() -> None:
    # Three spaces still open a fence; four do not (and the heading after them is real).
    three = f"## A\n{LONG_EN}\n   ```\n## inside\n   ```\n## B\n{LONG_EN}"
    assert headings(three) == ["A", "B"]
    four = f"## A\n{LONG_EN}\n    ```\n## B\n{LONG_EN}"
    assert headings(four) == ["A", "B"]
    assert contents(four)[0].endswith("    ```")


def test_two_backticks_are_not_a_fence() -> None:
    body = f"## A\n{LONG_EN}\n``\n## B\n{LONG_EN}"
    assert headings(body) == ["A", "B"]


# --- §3 headings -------------------------------------------------------------------------------


def test_every_level_from_two_starts_a_section_and_the_title_stays_in_the_text() -> None:
    body = f"# Title\n{LONG_EN}\n## A\n#### deep\n{LONG_EN}\n##### five\n{LONG_EN}\n###### six"
    chunks = chunk_markdown(body, "T")
    assert [(c.heading, c.level, c.ancestry) for c in chunks] == [
        (None, None, ()), ("deep", 4, ("A",)), ("five", 5, ("A", "deep"))]
    assert chunks[0].content == f"# Title\n{LONG_EN}\n\n## A"
    assert chunks[2].content == f"{LONG_EN}\n\n###### six"  # the empty h6 merged


def test_every_heading_level_starts_a_section_when_asked() -> None:
    body = f"# Title\n{LONG_EN}\n## A\n#### deep\n{LONG_EN}\n##### five\n{LONG_EN}\n###### six"
    chunks = chunk_markdown(body, "T", ChunkRules(heading_levels=(1, 2, 3, 4, 5, 6)))
    # `## A` has no text of its own: as any short section it is folded into the one before
    assert [(c.heading, c.level, c.ancestry) for c in chunks] == [
        ("Title", 1, ()), ("deep", 4, ("Title", "A")), ("five", 5, ("Title", "A", "deep"))]
    assert chunks[0].content == f"{LONG_EN}\n\n## A"
    assert chunks[2].content == f"{LONG_EN}\n\n###### six"  # the empty h6 merged
    assert chunks[1].context_text == "T > Title > A > deep"


def test_heading_levels_are_a_rule() -> None:
    body = f"# Title\n{LONG_EN}\n## A\n#### deep\n{LONG_EN}"
    chunks = chunk_markdown(body, "T", ChunkRules(heading_levels=(2, 3)))
    assert [c.heading for c in chunks] == [None, "A"]
    assert chunks[0].content == f"# Title\n{LONG_EN}"
    assert chunks[1].content == f"#### deep\n{LONG_EN}"


def test_heading_needs_a_space_and_is_stripped() -> None:
    body = (f"##NoSpace\n{LONG_EN}\n   ##   Spaced out ##  \n{LONG_EN}\n###\tTab\n"
            f"    ## indented code\n####### seven\n")
    chunks = chunk_markdown(body, "T")
    assert [c.heading for c in chunks] == [None, "Spaced out"]
    assert chunks[0].content.startswith("##NoSpace")
    assert chunks[1].content.endswith("### Tab\n\n    ## indented code\n####### seven")


def test_levels_and_ancestry() -> None:
    body = f"## A\n{LONG_EN}\n### A1\n{LONG_EN}\n### A2\n{LONG_EN}\n## B\n{LONG_EN}\n### B1\n{LONG_EN}"
    chunks = chunk_markdown(body, "Doc")
    assert [(c.heading, c.level, c.ancestry) for c in chunks] == [
        ("A", 2, ()),
        ("A1", 3, ("A",)),
        ("A2", 3, ("A",)),
        ("B", 2, ()),
        ("B1", 3, ("B",)),
    ]
    assert [c.context_text for c in chunks] == ["Doc > A", "Doc > A > A1", "Doc > A > A2", "Doc > B",
                                           "Doc > B > B1"]
    assert [c.chunk_index for c in chunks] == [0, 1, 2, 3, 4]


def test_h3_without_h2_has_empty_ancestry() -> None:
    chunks = chunk_markdown(f"### Only\n{LONG_EN}", "T")
    assert (chunks[0].level, chunks[0].ancestry) == (3, ())


def test_crlf_body_lines_lose_their_cr() -> None:
    body = f"## A\r\n{LONG_EN}\r\nsecond line\r\n"
    chunks = chunk_markdown(body, "T")
    assert chunks[0].heading == "A"
    assert chunks[0].content == f"{LONG_EN}\nsecond line"


# --- §3 excluded headings ----------------------------------------------------------------------


def test_excluded_h2_drops_its_lines_but_keeps_h3_below_it() -> None:
    body = (
        f"## Intro\n{LONG_EN}\n## Scratch notes\nsecret line\n### Child\n{LONG_EN}\n"
        f"## Next\n{LONG_EN}"
    )
    chunks = chunk_markdown(body, "T", ChunkRules(exclude_headings=("Scratch",)))
    assert [(c.heading, c.ancestry) for c in chunks] == [
        ("Intro", ()),
        ("Child", ("Scratch notes",)),
        ("Next", ()),
    ]
    assert all("secret" not in c.content for c in chunks)
    assert chunks[1].context_text == "T > Scratch notes > Child"


def test_excluded_h3_stops_at_next_heading_of_any_level() -> None:
    body = f"## A\n{LONG_EN}\n### 作業メモ\n消える行\n### B\n{LONG_JA}\n"
    chunks = chunk_markdown(body, "T", ChunkRules(exclude_headings=("メモ",)))
    assert [c.heading for c in chunks] == ["A", "B"]
    assert all("消える" not in c.content for c in chunks)


def test_exclusion_is_case_sensitive_substring() -> None:
    body = f"## scratch\n{LONG_EN}\n## Scratch\n{LONG_EN}"
    assert headings(body, ("Scratch",)) == ["scratch"]


def test_excluded_section_content_is_not_merged() -> None:
    body = f"## A\n{LONG_EN}\n## Drop\nx\n"
    assert contents(body, ("Drop",)) == [LONG_EN]


# --- §3 sections and the short-chunk merge -----------------------------------------------------


def test_empty_first_heading_stays_an_empty_chunk() -> None:
    body = f"## Empty\n## Full\n{LONG_EN}"
    chunks = chunk_markdown(body, "T")
    # The empty chunk is first (never merged); "Full" is long, so it stays on its own.
    assert [(c.heading, c.content) for c in chunks] == [("Empty", ""), ("Full", LONG_EN)]
    assert chunks[0].quality_score == 0.1  # 1.0 - 0.6 (short) - 0.3 (one line)


def test_empty_preamble_is_not_emitted() -> None:
    assert headings(f"\n\n  \n## A\n{LONG_EN}") == ["A"]


def test_preamble_only() -> None:
    chunks = chunk_markdown(f"  {LONG_EN}\n\n", "T")
    assert [(c.heading, c.level, c.content, c.context_text) for c in chunks] == [
        (None, None, LONG_EN, "T")
    ]


def test_empty_body_has_no_chunks() -> None:
    assert chunk_markdown("", "T") == ()
    assert chunk_markdown("\n \n", "T") == ()


def test_short_chunk_merges_with_heading_and_content() -> None:
    body = f"## A\n{LONG_EN}\n## B\nshort"
    assert contents(body) == [f"{LONG_EN}\n\n## B\n\nshort"]
    chunk = chunk_markdown(body, "T")[0]
    assert (chunk.heading, chunk.level, chunk.context_text) == ("A", 2, "T > A")


def test_short_h3_merges_with_its_own_marks() -> None:
    body = f"## A\n{LONG_EN}\n### B\nshort"
    assert contents(body) == [f"{LONG_EN}\n\n### B\n\nshort"]


def test_short_empty_heading_merges_as_heading_only() -> None:
    body = f"## A\n{LONG_EN}\n## B\n"
    assert contents(body) == [f"{LONG_EN}\n\n## B"]


def test_merge_into_empty_previous_has_no_leading_blank_line() -> None:
    body = "## A\n## B\nshort"
    assert contents(body) == ["## B\n\nshort"]
    assert contents("## A\n## B\n") == ["## B"]


def test_short_chunk_merges_into_preamble() -> None:
    body = f"{LONG_EN}\n## B\nshort"
    chunks = chunk_markdown(body, "T")
    assert [(c.heading, c.content) for c in chunks] == [(None, f"{LONG_EN}\n\n## B\n\nshort")]


def test_short_preamble_is_first_and_kept() -> None:
    body = f"short intro\n## B\n{LONG_EN}"
    assert contents(body) == ["short intro", LONG_EN]


def test_several_short_chunks_fold_into_one() -> None:
    body = f"## A\n{LONG_EN}\n## B\nb\n### C\nc\n## D\n{LONG_EN}"
    assert contents(body) == [f"{LONG_EN}\n\n## B\n\nb\n\n### C\n\nc", LONG_EN]
    assert headings(body) == ["A", "D"]


def test_merge_threshold_is_fifty_code_points() -> None:
    forty_nine = "x" * 49
    fifty = "x" * 50
    assert contents(f"## A\n{LONG_EN}\n## B\n{forty_nine}") == [
        f"{LONG_EN}\n\n## B\n\n{forty_nine}"
    ]
    assert contents(f"## A\n{LONG_EN}\n## B\n{fifty}") == [LONG_EN, fifty]


def test_merge_threshold_counts_japanese_in_code_points() -> None:
    # 49 kanji are 147 UTF-8 bytes but 49 code points: still short.
    ja49 = "日" * 49
    ja50 = "日" * 50
    assert len(ja49.encode("utf-8")) == 147
    assert contents(f"## A\n{LONG_JA}\n## B\n{ja49}") == [f"{LONG_JA}\n\n## B\n\n{ja49}"]
    assert contents(f"## A\n{LONG_JA}\n## B\n{ja50}") == [LONG_JA, ja50]


def test_merged_chunk_content_length_does_not_matter_for_later_chunks() -> None:
    # The test is on each chunk's own content, not the growing merged one.
    body = "## A\nx\n## B\ny\n## C\nz"
    assert contents(body) == ["x\n\n## B\n\ny\n\n## C\n\nz"]


# --- §3 breadcrumbs ----------------------------------------------------------------------------


def test_build_context_skips_empty_and_equal_neighbours() -> None:
    assert build_context(["Doc", "Doc", "A", "A", "B"]) == "Doc > A > B"
    assert build_context([" Doc ", None, "", "  ", "A"]) == "Doc > A"
    assert build_context(["A", "B", "A"]) == "A > B > A"
    assert build_context([None, "", "  "]) is None
    assert build_context([]) is None


def test_build_context_title_equal_to_heading() -> None:
    chunks = chunk_markdown(f"## Setup\n{LONG_EN}", "Setup")
    assert chunks[0].context_text == "Setup"


def test_build_context_cut_at_200_code_points() -> None:
    title = "題" * 150
    heading = "見" * 100
    context = build_context([title, heading])
    assert context == (title + " > " + heading)[:200]
    assert context is not None and len(context) == 200
    assert context.endswith(" > " + "見" * 47)  # 150 + 3 + 47 = 200


def test_build_context_of_exactly_200_is_kept() -> None:
    part = "a" * 200
    assert build_context([part]) == part


# --- §4 quality --------------------------------------------------------------------------------


def test_quality_examples() -> None:
    assert quality_score("a" * 29) == 0.1  # 1.0 - 0.6 - 0.3
    assert quality_score("a" * 30) == 0.7  # 1.0 - 0.3
    assert quality_score("a" * 79) == 0.7
    assert quality_score("a" * 80) == 1.0
    assert quality_score("TBD") == 0.0  # 1.0 - 0.6 - 0.5 - 0.3, clamped
    assert quality_score("short\nlines") == pytest.approx(1.0 - 0.6)
    assert quality_score("") == 0.1


def test_quality_strips_before_measuring() -> None:
    assert quality_score("   " + "a" * 29 + "\n\n") == 0.1
    assert quality_score("\n" + "a" * 40 + "\n") == 0.7  # no inner newline after strip


def test_quality_japanese_in_code_points() -> None:
    assert quality_score("日" * 29) == 0.1
    assert quality_score("日本語の文章" * 5) == 0.7  # 30 code points, one line


def test_quality_boilerplate_long_enough_to_skip_the_short_penalty() -> None:
    # Boilerplate is at most 7 code points, so it is always short: 0.6 + 0.5 + 0.3 > 1.
    assert quality_score("準備中。") == 0.0
    assert quality_score("(準備中)\n") == 0.0


@pytest.mark.parametrize(
    "content",
    ["TBD", "tbd", "Todo.", "WIP", "n/a", "N/A,", "未定", "準備中。", "(準備中)", "詳細は後述。",
     "詳細は後述する。、", "ここに書く", "後で書く", "coming SOON...", "後述", "  TODO \t. "],
)
def test_boilerplate(content: str) -> None:
    assert is_boilerplate(content)


@pytest.mark.parametrize(
    "content",
    ["", "   ", "...", "。", "TBD later", "（準備中）", "TODOs", "ＴＢＤ", "TBD!"],
)
def test_not_boilerplate(content: str) -> None:
    assert not is_boilerplate(content)


def test_boilerplate_case_folding_is_ascii_only() -> None:
    # "K" (U+212A KELVIN SIGN) lowercases to "k" under Unicode rules; ASCII folding keeps it.
    assert not is_boilerplate("\u212a")
    assert is_boilerplate("Coming Soon")


# --- §4 category and topic ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("note.md", (None, None)),
        ("ops/note.md", ("ops", None)),
        ("ops/backup/note.md", ("ops", "backup")),
        ("ops/backup/deep/er/note.md", ("ops", "backup")),
        ("技術/データベース/メモ.md", ("技術", "データベース")),
    ],
)
def test_category_topic(rel: str, expected: tuple[str | None, str | None]) -> None:
    assert category_topic(rel) == expected


def test_frontmatter_topic_overrides_path_topic() -> None:
    doc = parse_document("---\ntopic: 運用\n---\nbody", "ops/backup/note.md")
    assert (doc.category, doc.topic) == ("ops", "運用")
    plain = parse_document("body", "ops/backup/note.md")
    assert (plain.category, plain.topic) == ("ops", "backup")
    top = parse_document("---\ntopic: t\n---\nbody", "note.md")
    assert (top.category, top.topic) == (None, "t")


# --- parse_document ----------------------------------------------------------------------------


def test_parse_document_markdown_fields() -> None:
    text = (
        "\ufeff---\ntitle: Database Backup Schedule\ntags: [ops, db]\ndate: 2024-03-01\n"
        f"depth: 02\n---\n{LONG_EN}\n## Nightly\n{LONG_EN}\n"
    )
    doc = parse_document(text, "ops/backup.md")
    assert (doc.title, doc.topic, doc.category, doc.date, doc.depth, doc.tags) == (
        "Database Backup Schedule", None, "ops", "2024-03-01", "02", ("ops", "db"))
    assert doc.warnings == ()
    assert len(LONG_EN) == 78  # one line of 30–79 code points: 1.0 - 0.3 (a heading line lifts it)
    assert doc.chunks == (
        ChunkDraft(0, None, None, (), LONG_EN, "Database Backup Schedule", 0.7, 7, 7),
        ChunkDraft(1, "Nightly", 2, (), LONG_EN, "Database Backup Schedule > Nightly", 1.0, 8, 9),
    )


def test_parse_document_passes_exclusions_and_warnings() -> None:
    text = f"---\ntitle: [x]\n---\n## Keep\n{LONG_EN}\n## Scratch\ngone\n"
    doc = parse_document(text, "a.MD", ChunkRules(exclude_headings=("Scratch",)))
    assert [c.heading for c in doc.chunks] == ["Keep"]
    assert doc.title == "Keep"
    assert doc.warnings == (
        'failed to parse YAML frontmatter in a.MD: field "title" must be a scalar, got a sequence',
    )
    assert doc.chunks[0].context_text == "a > Keep"


def test_parse_document_yaml_error_keeps_body() -> None:
    doc = parse_document(f"---\ntitle: [oops\n---\n{LONG_EN}", "n.md")
    assert doc.title == "n"
    assert [c.content for c in doc.chunks] == [LONG_EN]
    assert len(doc.warnings) == 1


def test_parse_document_text_file() -> None:
    text = "\ufeff  first line\r\nsecond\rthird\n\n"
    doc = parse_document(text, "misc/sub/release_notes.TXT")
    assert (doc.title, doc.category, doc.topic, doc.tags, doc.date, doc.depth) == (
        "release notes", "misc", "sub", (), None, None)
    assert doc.chunks == (
        ChunkDraft(0, None, None, (), "first line\nsecond\nthird", "release notes", 1.0 - 0.6,
                   1, 3),
    )


def test_text_file_is_not_markdown() -> None:
    text = f"---\ntitle: X\n---\n## Heading\n{LONG_EN}"
    doc = parse_document(text, "a.txt")
    assert doc.title == "a"
    assert len(doc.chunks) == 1
    assert doc.chunks[0].content == text


def test_empty_text_file_has_no_chunks() -> None:
    assert parse_document("\ufeff \r\n \n", "a.txt").chunks == ()


def test_unknown_extension_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"only \.md and \.txt"):
        parse_document("x", "a.rst")
    with pytest.raises(ValueError):
        parse_document("x", ".md")


def test_an_unparseable_date_is_named_at_index_time() -> None:
    """Issue 15 item 3: say which notes carry a date the date filters can never match."""
    bad = parse_document("---\ndate: yesterday\n---\n# T\n\nbody text here\n", "a/b.md")
    assert bad.date == "yesterday"
    assert bad.warnings == ('a/b.md: date "yesterday" is not an ISO-8601 date (YYYY-MM-DD); '
                            "--date-from/--date-to never match this note",)
    for good in ("2026-05-06", "2026-05", "2026-05-06T10:00:00+09:00"):
        assert parse_document(f"---\ndate: {good}\n---\nbody\n", "c.md").warnings == ()


# --- file lines (line_start / line_end) ----------------------------------------------------------


def test_chunk_lines_point_at_heading_and_last_text_line() -> None:
    # lines: 1-3 frontmatter, 4 blank, 5 intro, 6 blank, 7 "## A", 8 blank, 9 short (merged
    # into the intro), 10 blank, 11 "## B", 12 blank, 13-14 body, 15 blank
    text = ("---\ntitle: X\n---\n\n" + LONG_EN + "\n\n## A\n\nshort\n\n## B\n\n"
            + LONG_EN + "\nmore\n\n")
    lines = text.split("\n")
    chunks = parse_document(text, "a/b.md").chunks
    assert [(c.line_start, c.line_end) for c in chunks] == [(5, 9), (11, 14)]
    assert lines[4] == chunks[0].content.split("\n")[0]
    assert lines[10] == "## B"
    assert lines[13] == "more"


def test_chunk_lines_count_crlf_bom_and_fences() -> None:
    # a heading inside a fence is body text; CRLF line ends count once
    text = ("\ufeff" + LONG_EN + "\r\n```\r\n## not a heading\r\n```\r\n## Real\r\n\r\n"
            + LONG_EN + "\r\n")
    chunks = parse_document(text, "n.md").chunks
    assert [(c.heading, c.line_start, c.line_end) for c in chunks] == [
        (None, 1, 4), ("Real", 5, 7)]


def test_heading_only_chunk_spans_its_heading_line() -> None:
    text = LONG_EN + "\n\n## Empty\n"
    chunks = parse_document(text, "n.md").chunks
    # the empty section is merged into the first chunk, which now ends at the heading
    assert [(c.line_start, c.line_end) for c in chunks] == [(1, 3)]


# --- §3 sections sized for the model -----------------------------------------------------------


def test_estimate_tokens_by_hand() -> None:
    # "Hello" 5 letters -> 2, "," 1, "world" 2, "!" 1, "2026" 4 digits -> 2, "日本語" 3 wide -> 3
    assert estimate_tokens("Hello, world! 2026 日本語") == 2 + 1 + 2 + 1 + 2 + 3
    assert estimate_tokens("snake_case") == 2 + 1 + 1  # "snake", "_", "case"
    assert estimate_tokens("") == 0


def test_a_long_section_is_split_at_paragraphs_and_keeps_its_heading() -> None:
    paragraph = " ".join(["word"] * 30)  # 30 estimated tokens
    # fences 3 + 3, `x = 1` 3 × 4, `more = 2` 3: 21, and kept whole across its blank line
    code = "```\n" + "\n".join(["x = 1"] * 4) + "\n\nmore = 2\n```"
    body = f"## Long\n{paragraph}\n\n{paragraph}\n\n{code}\n\n{paragraph}\n"
    assert estimate_tokens(code) == 21
    chunks = chunk_markdown(body, "T", ChunkRules(max_tokens=55))
    assert [(c.heading, c.level, c.context_text) for c in chunks] == [("Long", 2, "T > Long")] * 3
    assert [c.content for c in chunks] == [paragraph, f"{paragraph}\n\n{code}", paragraph]
    assert [(c.line_start, c.line_end) for c in chunks] == [(1, 2), (4, 13), (15, 15)]


def test_an_over_long_paragraph_and_line_are_cut_within_the_budget() -> None:
    lines = "\n".join(" ".join(["word"] * 20) for _ in range(4))  # one paragraph, 80 tokens
    chunks = chunk_markdown(f"## P\n{lines}", "T", ChunkRules(max_tokens=45))
    assert [(c.line_start, c.line_end) for c in chunks] == [(1, 3), (4, 5)]
    huge = "word " * 1000  # one line of 1000 estimated tokens, no newline
    cut = chunk_markdown(huge, "T", ChunkRules(max_tokens=100))
    assert len(cut) == 10 and all(estimate_tokens(c.content) <= 100 for c in cut)
    assert "".join(c.content.replace(" ", "") for c in cut) == "word" * 1000


def test_html_comments_are_not_indexed_unless_kept() -> None:
    body = (f"## A\n{LONG_EN} <!-- inline note -->\n<!--\n## Not a heading\nhidden\n-->\n"
            f"<!-- one line -->after\n```\n<!-- in code stays -->\n```\n")
    chunks = chunk_markdown(body, "T")
    assert [c.heading for c in chunks] == ["A"]
    assert chunks[0].content == (f"{LONG_EN} \n\n\n\n\nafter\n```\n<!-- in code stays -->\n```")
    kept = chunk_markdown(body, "T", ChunkRules(html_comments=True))
    assert [c.heading for c in kept] == ["A", "Not a heading"]


def test_a_budget_of_460_never_passes_the_window(real_models_dir: Path) -> None:
    """With the default model's own tokenizer, every chunk of English, Japanese, code and one
    huge line cut at 460 estimated tokens fits its 512-token window (passage prefix and special
    tokens included)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(real_models_dir / "multilingual-e5-small"
                                        / "tokenizer.json"))
    english = " ".join(f"The retry budget number {i} caps retries at a tenth." for i in range(400))
    japanese = "障害が起きたときの連絡手順を、当番表と一緒に確認します。" * 300
    code = "```python\n" + "\n".join(f"def f_{i}(x): return x * {i}  # {i}" for i in range(300))
    note = f"# Guide\n{english}\n\n## 日本語\n{japanese}\n\n### Code\n{code}\n```\n\n{'z' * 20000}"
    # 460 estimated tokens keeps every text measured inside the window; the default budget
    # is larger, for retrieval (index.md §3): its rare longer chunk keeps piece vectors
    chunks = parse_document(note, "guide.md", ChunkRules(max_tokens=460)).chunks
    longest = max(len(tokenizer.encode(f"passage: {c.content}").ids) for c in chunks)
    assert longest <= 512 and len(chunks) > 10
