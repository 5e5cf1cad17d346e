"""Golden file location, strict validation with exact messages, and index checks (eval.md §1)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from groove_cli.errors import GoldenError
from groove_cli.evaluate.golden import (
    Expected,
    GoldenQuery,
    expected_warnings,
    find_golden,
    load_golden,
)
from groove_cli.retrieve import query
from groove_cli.retrieve.query import ONLY_EXCLUSIONS

# The example of eval.md §1, verbatim (comments, `defaults`, `tags` and all).
SPEC_EXAMPLE = """\
defaults:              # optional; accepted and ignored (stderr note: "golden defaults are ignored")
  limit: 10            #   int
  rerank: true         #   bool
queries:               # required list
  - id: rrf-basics     # optional; default = first 32 code points of `query`; must be unique
    query: "…"         # required, non-empty string
    expected:          # required list; may be empty (then excluded from aggregates, shown as a miss)
      - path: "docs/ARCHITECTURE.md"   # required; KB-relative, '/' separators, exact comparison
        heading: "Data flow"           # optional
    tags: [a, b]       # optional, reserved, ignored
"""

def compile_query(text: str) -> None:
    """The golden loader's check: the real search query compiler (search.md §2.2)."""
    query.compile_query(text)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def load(path: Path) -> object:
    return load_golden(path, check_query=compile_query)


def error_of(path: Path) -> str:
    with pytest.raises(GoldenError) as caught:
        load_golden(path, check_query=compile_query)
    return caught.value.message


def test_spec_example_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path / ".groove-eval.yml", SPEC_EXAMPLE)
    golden = load_golden(path, check_query=compile_query)
    assert golden.path == path
    assert golden.has_defaults is True
    assert golden.golden_hash == hashlib.sha256(SPEC_EXAMPLE.encode("utf-8")).hexdigest()
    assert golden.queries == (
        GoldenQuery(
            index=0,
            id="rrf-basics",
            query="…",
            expected=(Expected(path="docs/ARCHITECTURE.md", heading="Data flow"),),
        ),
    )


def test_json_by_extension_and_defaults_flag(tmp_path: Path) -> None:
    document = {"queries": [{"query": "backup schedule", "expected": [{"path": "ops/db.md"}]}]}
    path = write(tmp_path / "golden.json", json.dumps(document))
    golden = load_golden(path, check_query=compile_query)
    assert golden.has_defaults is False
    assert golden.queries[0].expected == (Expected(path="ops/db.md", heading=None),)
    # The same text under a .yml name is parsed as YAML (JSON is YAML here), same result.
    as_yaml = load_golden(write(tmp_path / "golden.yml", json.dumps(document)),
                          check_query=compile_query)
    assert as_yaml.queries == golden.queries


def test_default_id_is_first_32_code_points(tmp_path: Path) -> None:
    text = "日本語のクエリ" * 6  # 42 code points, 3 UTF-8 bytes each
    path = write(tmp_path / "g.yml", f'queries:\n  - query: "{text}"\n    expected: []\n')
    golden = load_golden(path, check_query=compile_query)
    assert golden.queries[0].id == text[:32]
    assert len(golden.queries[0].id) == 32
    assert golden.queries[0].expected == ()


def test_unknown_field_exact_message(tmp_path: Path) -> None:
    queries = "".join(
        f'  - query: "query number {i}"\n    expected:\n      - path: a.md\n' for i in range(3)
    )
    path = write(
        tmp_path / "g.yml",
        "queries:\n" + queries
        + '  - query: "query number 3"\n    expected:\n      - path: a.md\n        relevance: 2\n',
    )
    assert error_of(path) == (
        f'failed to parse golden file {path}: unknown field "relevance" at queries[3].expected[0] '
        "(expected path, heading or grade)"
    )


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("queries: []\nextra: 1\n",
         'unknown field "extra" at the top level (expected defaults or queries)'),
        ("defaults:\n  limt: 3\nqueries: []\n",
         'unknown field "limt" at defaults (expected limit or rerank)'),
        ('queries:\n  - query: "x y z"\n    expected: []\n    tag: [a]\n',
         'unknown field "tag" at queries[0] (expected id, query, expected or tags)'),
    ],
)
def test_unknown_field_at_every_level(tmp_path: Path, text: str, detail: str) -> None:
    path = write(tmp_path / "g.yml", text)
    assert error_of(path) == f"failed to parse golden file {path}: {detail}"


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ('queries:\n  - {query: "a b c", expected: []}\n  - {query: "d e f", expected: []}\n'
         "  - {query: 42, expected: []}\n",
         "queries[2].query: expected a string"),
        ("- just a list\n", "the top level: expected a mapping"),
        ("queries: {a: 1}\n", "queries: expected a list"),
        ("queries:\n  - plain string\n", "queries[0]: expected a mapping"),
        ('queries:\n  - {query: "a b c", expected: a.md}\n', "queries[0].expected: expected a list"),
        ('queries:\n  - {query: "a b c", expected: [a.md]}\n',
         "queries[0].expected[0]: expected a mapping"),
        ('queries:\n  - {query: "a b c", expected: [{path: 7}]}\n',
         "queries[0].expected[0].path: expected a string"),
        ('queries:\n  - {query: "a b c", expected: [{path: a.md, heading: [x]}]}\n',
         "queries[0].expected[0].heading: expected a string"),
        ('queries:\n  - {id: 5, query: "a b c", expected: []}\n', "queries[0].id: expected a string"),
        ('queries:\n  - {query: "a b c", expected: [], tags: a}\n', "queries[0].tags: expected a list"),
        ('queries:\n  - {query: "a b c", expected: [], tags: [a, 1]}\n',
         "queries[0].tags[1]: expected a string"),
        ("defaults: {limit: ten}\nqueries: []\n", "defaults.limit: expected an integer"),
        ("defaults: {limit: true}\nqueries: []\n", "defaults.limit: expected an integer"),
        ("defaults: {rerank: 1}\nqueries: []\n", "defaults.rerank: expected a boolean"),
        ("defaults: 3\nqueries: []\n", "defaults: expected a mapping"),
    ],
)
def test_type_errors_name_the_location(tmp_path: Path, text: str, detail: str) -> None:
    path = write(tmp_path / "g.yml", text)
    assert error_of(path) == f"failed to parse golden file {path}: {detail}"


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("defaults: {limit: 3}\n", 'missing field "queries" at the top level'),
        ("queries:\n  - {expected: []}\n", 'missing field "query" at queries[0]'),
        ('queries:\n  - {query: "a b c"}\n', 'missing field "expected" at queries[0]'),
        ('queries:\n  - {query: "a b c", expected: [{heading: Setup}]}\n',
         'missing field "path" at queries[0].expected[0]'),
    ],
)
def test_missing_fields(tmp_path: Path, text: str, detail: str) -> None:
    path = write(tmp_path / "g.yml", text)
    assert error_of(path) == f"failed to parse golden file {path}: {detail}"


def test_duplicate_ids_including_defaulted_ones(tmp_path: Path) -> None:
    long_query = "how does the nightly database backup rotate its files"
    path = write(
        tmp_path / "g.yml",
        "queries:\n"
        '  - {id: one, query: "first query", expected: []}\n'
        f'  - {{query: "{long_query}", expected: []}}\n'
        f'  - {{query: "{long_query[:32]} differently", expected: []}}\n',
    )
    assert error_of(path) == (
        f'invalid golden file {path}: duplicate query id "{long_query[:32]}" at queries[2]; '
        "ids default to the first 32 characters of the query, so give one of them an explicit id"
    )


@pytest.mark.parametrize("query", ["", "   \t  "])
def test_empty_query_names_its_location(tmp_path: Path, query: str) -> None:
    path = write(tmp_path / "g.yml", f'queries:\n  - {{query: "ok query", expected: []}}\n'
                                     f'  - {{query: "{query}", expected: []}}\n')
    assert error_of(path) == f"invalid golden file {path}: queries[1]: the query is empty"


def test_exclusions_only_query_names_location_and_id(tmp_path: Path) -> None:
    path = write(tmp_path / "g.yml", 'queries:\n  - {id: neg, query: "-foo -bar", expected: []}\n')
    assert error_of(path) == f'invalid golden file {path}: queries[0] (id "neg"): {ONLY_EXCLUSIONS}'


def test_syntax_errors(tmp_path: Path) -> None:
    bad_yaml = write(tmp_path / "g.yml", "queries: [unclosed\n")
    assert error_of(bad_yaml).startswith(f"failed to parse golden file {bad_yaml}: ")
    bad_json = write(tmp_path / "g.json", '{"queries": [}')
    assert error_of(bad_json).startswith(f"failed to parse golden file {bad_json}: ")
    not_utf8 = tmp_path / "g.yaml"
    not_utf8.write_bytes(b"queries: [\xff]\n")
    assert error_of(not_utf8).startswith(f"failed to parse golden file {not_utf8}: not valid UTF-8")


def test_missing_file_message_and_hint(tmp_path: Path) -> None:
    path = tmp_path / "nope.yml"
    with pytest.raises(GoldenError) as caught:
        load(path)
    assert caught.value.message == f"no golden file at {path}"
    assert caught.value.hint == "pass --golden or create <kb>/.groove-eval.yml"


def test_refused_files(tmp_path: Path) -> None:
    target = write(tmp_path / "real.yml", "queries: []\n")
    link = tmp_path / "link.yml"
    link.symlink_to(target)
    assert error_of(link) == f"refusing to read golden file {link}: it is a symbolic link"

    hard = tmp_path / "hard.yml"
    os.link(target, hard)
    assert error_of(hard).startswith(f"refusing to read golden file {hard}: it is a hard link")

    folder = tmp_path / "folder.yml"
    folder.mkdir()
    assert error_of(folder) == f"refusing to read golden file {folder}: it is not a regular file"

    big = tmp_path / "big.yml"
    big.write_bytes(b"#" * (1024 * 1024 + 1))
    assert error_of(big) == f"refusing to read golden file {big}: it is larger than 1 MiB"


def test_exactly_one_mib_is_accepted(tmp_path: Path) -> None:
    body = b'queries: [{query: "one query", expected: []}]\n'
    path = tmp_path / "g.yml"
    path.write_bytes(body + b"#" * (1024 * 1024 - len(body)))
    assert [q.query for q in load_golden(path, check_query=compile_query).queries] == ["one query"]


def test_find_golden_order(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    explicit = write(tmp_path / "explicit.yml", "queries: []\n")
    configured = write(tmp_path / "configured.yml", "queries: []\n")
    assert find_golden(explicit, configured, kb) == explicit
    assert find_golden(None, configured, kb) == configured

    with pytest.raises(GoldenError) as caught:
        find_golden(None, None, kb)
    assert caught.value.message == f"no golden file at {kb / '.groove-eval.yml'}"
    assert caught.value.hint == "pass --golden or create <kb>/.groove-eval.yml"

    write(kb / ".groove-eval.json", "{}")
    assert find_golden(None, None, kb) == kb / ".groove-eval.json"
    write(kb / ".groove-eval.yaml", "")
    assert find_golden(None, None, kb) == kb / ".groove-eval.yaml"
    write(kb / ".groove-eval.yml", "")
    assert find_golden(None, None, kb) == kb / ".groove-eval.yml"

    # A named file that is missing is an error, with no fallback to the KB's default file.
    with pytest.raises(GoldenError) as caught:
        find_golden(tmp_path / "gone.yml", None, kb)
    assert caught.value.message == f"no golden file at {tmp_path / 'gone.yml'}"
    with pytest.raises(GoldenError):
        find_golden(None, tmp_path / "gone.yml", kb)


def test_expected_warnings(tmp_path: Path) -> None:
    path = write(
        tmp_path / "g.yml",
        "queries:\n"
        '  - query: "first query"\n'
        "    expected:\n"
        "      - {path: a.md}\n"
        "      - {path: missing.md}\n"
        '  - query: "second query"\n'
        "    expected:\n"
        '      - {path: a.md, heading: "  SETUP "}\n'
        '      - {path: a.md, heading: "Set  up"}\n'
        '      - {path: missing.md, heading: "Setup"}\n',
    )
    golden = load_golden(path, check_query=compile_query)
    headings = {"a.md": {"Setup", "Usage"}}
    warnings = expected_warnings(
        golden, has_path=lambda p: p in headings, headings_of=lambda p: headings[p]
    )
    assert warnings == [
        "golden: queries[0].expected[1]: path missing.md is not in the index",
        'golden: queries[1].expected[1]: no chunk of a.md has the heading "Set  up"',
        "golden: queries[1].expected[2]: path missing.md is not in the index",
    ]


# --------------------------------------------------------------------------- issue 15


def test_no_queries_is_refused(tmp_path: Path) -> None:
    """Item 9: `queries: []` measured nothing and printed 0.000 metrics as if it had."""
    path = write(tmp_path / "g.yml", "queries: []\n")
    assert error_of(path) == (f"failed to parse golden file {path}: queries: the list is empty; "
                              "add at least one query to measure")


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    """Item 12: a repeated `query:` silently replaced the first one."""
    path = write(tmp_path / "g.yml", "queries:\n  - query: first one\n    query: second one\n"
                                     "    expected: []\n")
    assert error_of(path).startswith(f'failed to parse golden file {path}: duplicate key "query"')
    as_json = write(tmp_path / "g.json",
                    '{"queries": [{"query": "first one", "query": "second", "expected": []}]}')
    assert error_of(as_json) == (f'failed to parse golden file {as_json}: duplicate key "query"')


def test_a_query_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    """Item 1: `\\udcff` (a byte that is not UTF-8) reached SQLite and crashed the FTS leg."""
    path = write(tmp_path / "g.json", '{"queries": [{"query": "retry \\udcff budget", '
                                      '"expected": []}]}')
    assert error_of(path) == (f"failed to parse golden file {path}: queries[0].query is not "
                              "valid UTF-8 text (byte 0xff at character 7)")


def test_the_readme_example_is_a_valid_golden_file_of_the_sample_kb(tmp_path: Path) -> None:
    # issue 28: the README never showed the golden file's format; the example it shows now must
    # load, and name notes and headings golden/ has
    repo = Path(__file__).resolve().parent.parent
    readme = (repo / "README.md").read_text(encoding="utf-8")
    block = readme.split("**The golden file**", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    example = tmp_path / ".groove-eval.yml"
    example.write_text(block, encoding="utf-8")
    golden = load_golden(example, check_query=query.compile_query)
    assert [q.id for q in golden.queries] == ["pitr", "backup-retention"]
    for q in golden.queries:
        for entry in q.expected:
            note = (repo / "golden" / entry.path).read_text(encoding="utf-8")
            assert entry.heading is None or f"## {entry.heading}" in note
