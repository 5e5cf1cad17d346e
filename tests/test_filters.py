"""Row filters, the glob dialect and `filter_applied` (search.md §10)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groove_cli.errors import UsageError
from groove_cli.retrieve.filters import (
    FilterSpec,
    RowFilter,
    _GlobParser,
    compile_filters,
    filter_applied,
    glob_to_regex,
    split_tags,
)
from tests.waiting import hang_guard


def row(
    f: RowFilter,
    *,
    quality: float = 1.0,
    category: str | None = "ops",
    topic: str | None = "db",
    path: str = "ops/db/backup.md",
    tags: Sequence[str] = ("a", "b"),
    date: str | None = "2026-05-06",
) -> bool:
    return f.passes(
        quality=quality, category=category, topic=topic, path=path, tags=tags, date=date
    )


def test_default_spec_is_inactive_and_passes_everything() -> None:
    f = compile_filters(FilterSpec())
    assert f.active is False
    assert row(f, quality=0.0, category=None, topic=None, tags=(), date=None)


def test_quality() -> None:
    f = compile_filters(FilterSpec(quality_threshold=0.3))
    assert f.active
    assert row(f, quality=0.3)  # drop only quality < t
    assert not row(f, quality=0.29)
    # t = 0 (eval/tune) never drops, even negative quality.
    assert row(compile_filters(FilterSpec(quality_threshold=0.0)), quality=-1.0)


def test_category_and_topic_exact_null_never_matches() -> None:
    f = compile_filters(FilterSpec(category="ops", topic="db"))
    assert f.active
    assert row(f)
    assert not row(f, category="Ops")
    assert not row(f, category=None)
    assert not row(f, topic="dbs")
    assert not row(f, topic=None)
    only_topic = compile_filters(FilterSpec(topic="db"))
    assert row(only_topic, category=None)


def test_tags_any_all() -> None:
    any_f = compile_filters(FilterSpec(tags_any=("x", "b")))
    assert any_f.active
    assert row(any_f, tags=["b"])
    assert not row(any_f, tags=["B", "y"])  # case-sensitive
    assert not row(any_f, tags=[])
    all_f = compile_filters(FilterSpec(tags_all=("a", "b")))
    assert row(all_f, tags=["b", "c", "a"])
    assert not row(all_f, tags=["a"])
    both = compile_filters(FilterSpec(tags_any=("z",), tags_all=("a",)))
    assert not row(both, tags=["a"])
    assert row(both, tags=["a", "z"])


def test_dates_are_iso_days_inclusive() -> None:
    f = compile_filters(FilterSpec(date_from="2026-01-01", date_to="2026-06-30"))
    assert f.active
    assert row(f, date="2026-01-01")
    assert row(f, date="2026-06-30")
    assert not row(f, date="2025-12-31")
    assert not row(f, date="2026-07-01")
    # Issue 15 item 3: days are compared, so a date-time on the last day is inside the bound
    assert row(f, date="2026-06-30T10:00")
    assert row(f, date="2026-03")  # a reduced note date stands for its first day
    # a reduced bound covers its whole year or month
    year = compile_filters(FilterSpec(date_from="2026", date_to="2026-02"))
    assert (year.date_from, year.date_to) == ("2026-01-01", "2026-02-28")
    assert row(year, date="2026-02-28") and not row(year, date="2026-03-01")


@pytest.mark.parametrize("bound", ["yesterday", "2025-13-45", "05/06/2026", "2026-02-30", ""])
@pytest.mark.parametrize("flag", ["--date-from", "--date-to"])
def test_a_bound_that_is_not_a_date_is_a_usage_error(flag: str, bound: str) -> None:
    """Issue 15 item 3: "yesterday" was compared as a string and returned 0 hits, exit 0."""
    spec = FilterSpec(date_from=bound) if flag == "--date-from" else FilterSpec(date_to=bound)
    with pytest.raises(UsageError) as caught:
        compile_filters(spec)
    assert caught.value.message == f'{flag} "{bound}" is not an ISO-8601 date'
    assert caught.value.exit_code == 2


@pytest.mark.parametrize("date", ["yesterday", "2025-13-45", "someday soon"])
def test_an_unparseable_note_date_passes_no_bound(date: str) -> None:
    """A note with `date: yesterday` passed every lower bound ("y" sorts after "2")."""
    assert not row(compile_filters(FilterSpec(date_from="1900-01-01")), date=date)
    assert not row(compile_filters(FilterSpec(date_to="2999-12-31")), date=date)
    assert row(compile_filters(FilterSpec()), date=date)  # without a bound nothing is checked


def test_filter_values_must_be_utf8() -> None:
    with pytest.raises(UsageError) as caught:
        compile_filters(FilterSpec(category="caf\udce9"))
    assert caught.value.message == "--category is not valid UTF-8 text (byte 0xe9 at character 4)"


def test_null_date_fails_when_either_bound_is_set() -> None:
    assert not row(compile_filters(FilterSpec(date_from="2000")), date=None)
    assert not row(compile_filters(FilterSpec(date_to="2100")), date=None)


def test_everything_and_combined() -> None:
    f = compile_filters(
        FilterSpec(
            quality_threshold=0.5,
            category="ops",
            topic="db",
            path_globs=("ops/**",),
            tags_any=("a",),
            tags_all=("b",),
            date_from="2026",
        )
    )
    assert row(f)
    assert not row(f, quality=0.1)
    assert not row(f, path="dev/x.md")
    assert not row(f, tags=["a"])


# --- globs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        # `*` and `**` cross `/`; the whole path must match.
        ("*.md", "notes/deep/x.md", True),
        ("*.md", "x.mdx", False),
        ("ops/*", "ops/db/backup.md", True),
        ("**", "a/b/c.txt", True),
        ("ops/**/backup.md", "ops/db/backup.md", True),
        ("ops/**/backup.md", "ops/backup.md", True),  # a whole-component ** spans zero dirs
        ("**/backup.md", "backup.md", True),
        ("**/backup.md", "ops/db/backup.md", True),
        ("ops", "ops/db/backup.md", False),
        ("db/*", "ops/db/backup.md", False),  # anchored at the start
        # `?` is exactly one character, `/` included.
        ("ops?db/backup.md", "ops/db/backup.md", True),
        ("x?.md", "x.md", False),
        # Classes and negated classes, with ranges.
        ("notes/[abc].md", "notes/b.md", True),
        ("notes/[abc].md", "notes/d.md", False),
        ("notes/[!abc].md", "notes/d.md", True),
        ("notes/[!abc].md", "notes/a.md", False),
        ("notes/[a-c0-9].md", "notes/7.md", True),
        ("notes/[]x].md", "notes/].md", True),  # ] first is a member
        ("notes/[!]].md", "notes/].md", False),
        ("notes/[a-].md", "notes/-.md", True),  # trailing - is literal
        ("notes/[^a].md", "notes/^.md", True),  # ^ is an ordinary member
        # Alternatives, nested, holding wildcards.
        ("{ops,dev}/**", "dev/x.md", True),
        ("{ops,dev}/**", "docs/x.md", False),
        ("notes/{*.md,*.txt}", "notes/a.txt", True),
        ("notes/{a,b{1,2}}.md", "notes/b2.md", True),
        ("notes/{a,b{1,2}}.md", "notes/b3.md", False),
        ("notes/x{,-draft}.md", "notes/x.md", True),
        ("notes/x{,-draft}.md", "notes/x-draft.md", True),
        # Case-sensitive; regex metacharacters are literal; , and } outside braces are literal.
        ("Notes/*.md", "notes/a.md", False),
        ("a+b (1).md", "a+b (1).md", True),
        ("a.md", "aXmd", False),
        ("a,b}.md", "a,b}.md", True),
        # Non-ASCII.
        ("日記/*.md", "日記/2026.md", True),
    ],
)
def test_glob_dialect(glob: str, path: str, matches: bool) -> None:
    assert bool(glob_to_regex(glob).fullmatch(path)) is matches


@pytest.mark.parametrize("glob", ["[abc", "notes/[!", "{a,b", "a{b{c}", "[z-a]", "", "!"])
def test_malformed_glob_is_a_usage_error(glob: str) -> None:
    with pytest.raises(UsageError) as info:
        compile_filters(FilterSpec(path_globs=(glob,)))
    assert info.value.message == f'invalid path_glob pattern: "{glob}"'
    assert info.value.exit_code == 2


def test_include_and_exclude_sets() -> None:
    f = compile_filters(FilterSpec(path_globs=("ops/**", "dev/**", "!**/draft-*", "!dev/tmp/*")))
    assert f.active
    assert row(f, path="ops/backup.md")
    assert row(f, path="dev/x.md")
    assert not row(f, path="ops/draft-1.md")
    assert not row(f, path="dev/tmp/x.md")
    assert not row(f, path="docs/x.md")  # no include matches


def test_only_excludes_pass_everything_else() -> None:
    f = compile_filters(FilterSpec(path_globs=("!archive/**",)))
    assert row(f, path="ops/x.md")
    assert not row(f, path="archive/old.md")


def test_glob_limits() -> None:
    compile_filters(FilterSpec(path_globs=tuple(f"d{i}/**" for i in range(64))))
    with pytest.raises(UsageError, match="--path-glob"):
        compile_filters(FilterSpec(path_globs=tuple(f"d{i}/**" for i in range(65))))
    compile_filters(FilterSpec(path_globs=("a" * 1024,)))
    with pytest.raises(UsageError, match="--path-glob"):
        compile_filters(FilterSpec(path_globs=("a" * 1025,)))
    with pytest.raises(UsageError, match="--path-glob"):
        compile_filters(FilterSpec(path_globs=("日" * 342,)))  # 1026 UTF-8 bytes


# --- tags --------------------------------------------------------------------------------


def test_split_tags() -> None:
    assert split_tags(["a,b", "c", " d , e ,", ""]) == ("a", "b", "c", "d", "e")
    assert split_tags([]) == ()
    assert split_tags(["Db,db"]) == ("Db", "db")


def test_split_tags_limits_name_the_flag() -> None:
    assert len(split_tags([",".join(str(i) for i in range(64))])) == 64
    with pytest.raises(UsageError, match="--tag-all"):
        split_tags([",".join(str(i) for i in range(65))], flag="--tag-all")
    assert split_tags(["x" * 1024]) == ("x" * 1024,)
    with pytest.raises(UsageError, match="--tag-any"):
        split_tags(["x" * 1025], flag="--tag-any")
    with pytest.raises(UsageError, match="--tag-any"):
        split_tags(["é" * 513], flag="--tag-any")  # 1026 UTF-8 bytes


# --- filter_applied ------------------------------------------------------------------------


def test_filter_applied_empty_by_default() -> None:
    assert filter_applied(FilterSpec(), explicit_min_confidence_ratio=None) == {}


def test_filter_applied_never_echoes_quality() -> None:
    spec = FilterSpec(quality_threshold=0.7)
    assert filter_applied(spec, explicit_min_confidence_ratio=None) == {}


def test_filter_applied_all_keys_in_order() -> None:
    spec = FilterSpec(
        quality_threshold=0.3,
        category="ops",
        topic="db",
        path_globs=("ops/**", "!**/draft-*"),
        tags_any=("a", "b"),
        tags_all=("c",),
        date_from="2026-01-01",
        date_to="2026-12-31",
    )
    applied = filter_applied(spec, explicit_min_confidence_ratio=2.0)
    assert applied == {
        "category": "ops",
        "topic": "db",
        "path_globs": ["ops/**", "!**/draft-*"],
        "tags_any": ["a", "b"],
        "tags_all": ["c"],
        "date_from": "2026-01-01",
        "date_to": "2026-12-31",
        "min_confidence_ratio": 2.0,
    }
    assert list(applied) == [
        "category",
        "topic",
        "path_globs",
        "tags_any",
        "tags_all",
        "date_from",
        "date_to",
        "min_confidence_ratio",
    ]


def test_filter_applied_only_given_keys() -> None:
    spec = FilterSpec(topic="db", date_to="2026")
    assert filter_applied(spec, explicit_min_confidence_ratio=None) == {
        "topic": "db",
        "date_to": "2026",
    }
    # An explicit ratio of 0 (disabling low_confidence) is still given with effect.
    assert filter_applied(FilterSpec(), explicit_min_confidence_ratio=0.0) == {
        "min_confidence_ratio": 0.0
    }


# --------------------------------------------------------------------------- issue 15 item 2


def _oracle(items: list[Any]) -> str:
    """The plain (backtracking) regex of parsed glob items: the reference semantics."""
    out = []
    for item in items:
        if item == "*":
            out.append(".*")
        elif isinstance(item, str):
            out.append(item)
        else:
            out.append("(?:" + "|".join(_oracle(option) for option in item) + ")")
    return "".join(out)


def test_hostile_globs_finish_fast() -> None:
    """`{,}` x 40 and `*a` x 12 + `x` ran for minutes under regex backtracking.

    Backtracking on these is polynomial of degree 12 and 4 in 5,000-6,000 characters: it would
    run far past the hang guard, while the compiled matchers answer in milliseconds."""
    with pytest.raises(UsageError) as caught:
        glob_to_regex("{,}" * 40)
    assert caught.value.message.startswith("path_glob pattern has more than 256 ")
    with hang_guard(what="matching hostile globs"):
        matcher = glob_to_regex("*a" * 12 + "x")
        assert not matcher.fullmatch("a" * 5000)
        assert matcher.fullmatch("a" * 5000 + "x")
        assert not glob_to_regex("{*a,*b}" * 4 + "x").fullmatch("ab" * 3000)
    with pytest.raises(UsageError, match="invalid path_glob"):
        glob_to_regex("{" * 600 + "a" + "}" * 600)


GLOB_CHARS = st.sampled_from(["a", "b", "/", ".", "*", "**", "**/", "?", "[ab]", "[!a]",
                              "{a,b}", "{,a*}", "{x/**/,}"])


@given(st.lists(GLOB_CHARS, min_size=1, max_size=6).map("".join),
       st.text(alphabet="ab/.x\n", max_size=12))
@settings(max_examples=300, deadline=None)
def test_matcher_agrees_with_the_plain_regex(glob: str, path: str) -> None:
    items = _GlobParser(glob).parse()
    expected = re.fullmatch("(?s:" + _oracle(items) + ")", path) is not None
    try:
        matcher = glob_to_regex(glob)
    except UsageError as refused:  # only for too many brace combinations
        assert "combinations" in refused.message
        return
    assert matcher.fullmatch(path) is expected
