"""Invariants of the chunker over generated notes (hypothesis).

The generator builds a note from known blocks (text, headings, closed code fences, blank lines),
so the expected body text is known without re-running the chunker's own rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from groove_cli.chunk import (
    ChunkDraft,
    ChunkRules,
    build_context,
    chunk_markdown,
    estimate_tokens,
    parse_document,
)

POISON = "☠"
"""Appears only in excluded sections, so it must never reach a chunk."""
MARKER = "SKIP"
"""Headings containing it are excluded."""
RULES = ChunkRules(heading_levels=(2, 3), exclude_headings=(MARKER,), max_tokens=8192)
"""The generator writes `##` and `###` headings; other `#` runs stay body text."""

_ALPHABET = st.sampled_from(
    list("abcXYZ019 .,-_*#`~>|") + list("日本語のメモ検索。、") + ["\t", "\u3000"]
)
_FENCE_START = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _is_plain(line: str) -> bool:
    """A line the chunker must treat as body text outside a fence."""
    stripped = line.strip()
    return not (
        stripped.startswith("## ")
        or stripped.startswith("### ")
        or _FENCE_START.match(line)
        or MARKER in line
    )


def _without(char: str) -> Callable[[str], bool]:
    """A filter keeping lines that do not contain `char` (so they cannot close a fence)."""
    return lambda line: char not in line


text_lines = st.text(_ALPHABET, max_size=70).filter(_is_plain)
heading_texts = st.text(_ALPHABET, min_size=1, max_size=30).map(str.strip).filter(
    # a trailing run of `#` after a space is the heading's closing sequence, not its text
    lambda text: bool(text) and MARKER not in text and not re.search(r"(?:^|\s)#+$", text)
)


@dataclass
class Note:
    """A generated body and what the chunker must keep of it."""

    lines: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """Body lines outside excluded sections, heading lines left out."""
    headings: list[str] = field(default_factory=list)
    """Texts of the headings that are not excluded, in order."""
    excluded: bool = False


@dataclass(frozen=True)
class Generated:
    body: str
    expected: str
    """The non-whitespace characters that must survive, in order."""
    headings: tuple[str, ...]


@st.composite
def notes(draw: st.DrawFn) -> Generated:
    """A body built from known blocks, with what the chunker must keep of it."""
    note = Note()
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["text", "text", "blank", "heading", "fence"]))
        if kind == "text":
            body = [draw(text_lines)]
        elif kind == "blank":
            body = [draw(st.sampled_from(["", " ", "\t"]))]
        elif kind == "fence":
            char = draw(st.sampled_from("`~"))
            run = char * draw(st.integers(3, 5))
            info = draw(st.sampled_from(["", "python", " yaml "]))
            inner = draw(
                st.lists(
                    st.one_of(
                        text_lines.filter(_without(char)),
                        heading_texts.map(lambda text: f"## {text}"),
                        heading_texts.map(lambda text: f"### {text}"),
                    ),
                    max_size=4,
                )
            )
            closing = run + draw(st.sampled_from(["", char, "  "]))
            body = [run + info, *inner, closing]
        else:
            level = draw(st.sampled_from(["## ", "### "]))
            text = draw(heading_texts)
            if draw(st.booleans()) and draw(st.booleans()):
                text = f"{text} {MARKER}"
            indent = draw(st.sampled_from(["", " ", "  "]))
            note.lines.append(f"{indent}{level}{text}")
            note.excluded = MARKER in text
            if note.excluded:
                note.lines.append(POISON)
            else:
                note.headings.append(text)
            continue
        note.lines.extend(body)
        if not note.excluded:
            note.kept.extend(body)
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    expected = "".join(char for line in note.kept for char in line if not char.isspace())
    return Generated(newline.join(note.lines), expected, tuple(note.headings))


def _is_subsequence(needle: str, haystack: str) -> bool:
    chars = iter(haystack)
    return all(char in chars for char in needle)


def _check_shape(chunks: tuple[ChunkDraft, ...]) -> None:
    assert [chunk.chunk_index for chunk in chunks] == list(range(len(chunks)))
    for position, chunk in enumerate(chunks):
        assert chunk.content == chunk.content.strip()
        assert chunk.content or chunk.heading is not None
        assert 0.0 <= chunk.quality_score <= 1.0
        assert chunk.context_text is None or 0 < len(chunk.context_text) <= 200
        assert (chunk.heading is None) == (chunk.level is None)
        assert chunk.level in (None, 2, 3)
        if chunk.level == 2:
            assert chunk.ancestry == ()
        if chunk.heading is None:
            assert position == 0
        if position > 0:
            # Only a chunk of at least 50 code points stays on its own after the first.
            assert len(chunk.content) >= 50


@settings(max_examples=200, deadline=None)
@given(notes(), st.text(_ALPHABET, max_size=250))
def test_chunks_cover_the_body_in_order(note: Generated, title: str) -> None:
    chunks = chunk_markdown(note.body, title, RULES)
    found = "".join(c for chunk in chunks for c in chunk.content if not c.isspace())
    assert _is_subsequence(note.expected, found)
    assert all(POISON not in chunk.content for chunk in chunks)
    _check_shape(chunks)


@settings(max_examples=200, deadline=None)
@given(notes())
def test_every_kept_heading_is_a_chunk_or_merged_into_one(note: Generated) -> None:
    chunks = chunk_markdown(note.body, "T", RULES)
    own = [chunk.heading for chunk in chunks if chunk.heading is not None]
    positions = iter(note.headings)
    assert all(heading in positions for heading in own)  # in generated order
    merged = [h for h in note.headings if h not in own]
    text = "\n\n".join(chunk.content for chunk in chunks)
    assert all(f"## {heading}" in text for heading in merged)
    assert all(MARKER not in (chunk.heading or "") for chunk in chunks)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400), st.sampled_from(["n.md", "a/b.MD", "a/b/c.txt"]))
def test_any_text_parses(text: str, rel: str) -> None:
    doc = parse_document(text, rel, ChunkRules(heading_levels=(2, 3), exclude_headings=("x",)))
    _check_shape(doc.chunks)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=3000), st.sampled_from(["n.md", "a/b.txt"]), st.integers(8, 120))
def test_no_chunk_is_over_the_budget_and_none_loses_text(text: str, rel: str,
                                                          budget: int) -> None:
    doc = parse_document(text, rel, ChunkRules(max_tokens=budget, html_comments=True))
    assert all(estimate_tokens(chunk.content) <= budget for chunk in doc.chunks)
    lines = [c.line_start for c in doc.chunks]
    assert lines == sorted(lines) and all(c.line_start <= c.line_end for c in doc.chunks)
    assert all(isinstance(tag, str) for tag in doc.tags)
    assert all(w.startswith(f"failed to parse YAML frontmatter in {rel}: ") for w in doc.warnings)


@given(st.lists(st.one_of(st.none(), st.text(max_size=120)), max_size=8))
def test_context_shape(parts: list[str | None]) -> None:
    context = build_context(parts)
    if context is None:
        assert all(not (part or "").strip() for part in parts)
    else:
        assert 0 < len(context) <= 200
        assert context == context.lstrip()
