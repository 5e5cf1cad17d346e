"""Finding: documents that quote two or more golden queries verbatim (eval.md §9)."""

from __future__ import annotations

from typing import Any

from groove_cli.evaluate.findings import (
    findings_warning_text,
    golden_quoted_findings,
    normalize,
)
from groove_cli.evaluate.golden import Expected, GoldenQuery

Q_BACKUP = "How often does the database backup run?"
Q_RRF = "reciprocal rank fusion constant"
Q_ROTATE = "log rotation policy"


def golden(*items: tuple[str, str, tuple[str, ...]]) -> list[GoldenQuery]:
    return [
        GoldenQuery(index=i, id=qid, query=text,
                    expected=tuple(Expected(path=p, heading=None) for p in paths))
        for i, (qid, text, paths) in enumerate(items)
    ]


QUERIES = golden(
    ("backup", Q_BACKUP, ("ops/backup.md",)),
    ("rrf", Q_RRF, ("docs/fusion.md",)),
    ("rotate", Q_ROTATE, ("ops/logs.md",)),
    ("short", "backup", ("ops/backup.md",)),  # 6 code points: never a needle
)


def test_normalize() -> None:
    assert normalize("  How  often\n does\tIT run? ") == "how often does it run?"


def test_document_quoting_two_queries_is_flagged_with_ranks() -> None:
    chunks = [
        ("leak/notes.md", None, None, f"Questions: {Q_BACKUP.upper()}"),
        ("leak/notes.md", "Reciprocal  Rank\nFusion constant", None, "unrelated body"),
        ("ops/backup.md", "Backup", None, "the backup runs nightly"),
    ]
    top_paths = {"backup": ["ops/backup.md", "leak/notes.md"], "rrf": ["docs/fusion.md"]}
    assert golden_quoted_findings(QUERIES, chunks, top_paths) == [
        {
            "check": "golden-queries-quoted",
            "path": "leak/notes.md",
            "quoted": [
                {"query_id": "backup", "rank_in_top_k": 2},
                {"query_id": "rrf", "rank_in_top_k": None},
            ],
        }
    ]


def test_a_single_quote_is_not_flagged() -> None:
    chunks = [("a.md", None, None, f"{Q_BACKUP} and the word backup")]
    assert golden_quoted_findings(QUERIES, chunks, {}) == []


def test_fields_and_chunks_are_not_joined() -> None:
    half = len(Q_RRF) // 2
    chunks = [
        ("a.md", None, None, Q_BACKUP),
        ("a.md", Q_RRF[:half], None, Q_RRF[half:]),  # split across heading and content
        ("a.md", None, None, Q_ROTATE[:8]),
        ("a.md", None, None, Q_ROTATE[8:]),  # split across chunks
    ]
    assert golden_quoted_findings(QUERIES, chunks, {}) == []


def test_context_text_is_scanned_and_quotes_across_chunks_of_one_document_count() -> None:
    chunks = [
        ("a.md", None, f"a > {Q_ROTATE}", "body"),
        ("a.md", "", None, f"see: {Q_RRF}."),
    ]
    found = golden_quoted_findings(QUERIES, chunks, {})
    assert [q["query_id"] for q in found[0]["quoted"]] == ["rrf", "rotate"]


def test_expected_document_is_exempt_for_its_own_queries() -> None:
    # ops/backup.md quotes two queries, but is expected by one of them: only one quote remains.
    chunks = [("ops/backup.md", None, None, f"{Q_BACKUP} / {Q_RRF}")]
    assert golden_quoted_findings(QUERIES, chunks, {}) == []
    # A heading-specific expectation exempts the whole document as well.
    queries = golden(("a", Q_BACKUP, ()), ("b", Q_RRF, ()), ("c", Q_ROTATE, ()))
    queries[0] = GoldenQuery(index=0, id="a", query=Q_BACKUP,
                             expected=(Expected(path="x.md", heading="Somewhere"),))
    chunks = [("x.md", None, None, f"{Q_BACKUP} {Q_RRF}")]
    assert golden_quoted_findings(queries, chunks, {}) == []


def test_needle_inside_another_matched_needle_is_dropped() -> None:
    queries = golden(("long", "log rotation policy for nginx", ()), ("inner", Q_ROTATE, ()),
                     ("other", Q_RRF, ()))
    only_long = [("a.md", None, None, "the log rotation policy for nginx is weekly")]
    assert golden_quoted_findings(queries, only_long, {}) == []
    with_other = [("a.md", None, None, f"log rotation policy for nginx; {Q_RRF}")]
    found = golden_quoted_findings(queries, with_other, {})
    assert [q["query_id"] for q in found[0]["quoted"]] == ["long", "other"]


def test_identical_normalised_queries_fold_into_one_needle() -> None:
    queries = golden(("first", Q_RRF, ()), ("second", "  Reciprocal RANK fusion constant ", ()),
                     ("third", Q_ROTATE, ()))
    folded_only = [("a.md", None, None, Q_RRF)]
    assert golden_quoted_findings(queries, folded_only, {}) == []  # one needle, not two
    both = [("a.md", None, None, f"{Q_RRF} {Q_ROTATE}")]
    found = golden_quoted_findings(queries, both, {"first": ["b.md", "a.md"], "second": ["a.md"]})
    assert found[0]["quoted"] == [{"query_id": "first", "rank_in_top_k": 2},
                                  {"query_id": "third", "rank_in_top_k": None}]
    # Any folded query expecting the document exempts the needle.
    queries[1] = GoldenQuery(index=1, id="second", query=queries[1].query,
                             expected=(Expected(path="a.md", heading=None),))
    assert golden_quoted_findings(queries, both, {}) == []


def test_length_threshold_is_twelve_code_points() -> None:
    queries = golden(("eleven", "abcdefghijk", ()), ("twelve", "ábcdefghijkl", ()),
                     ("other", Q_RRF, ()))
    chunks = [("a.md", None, None, f"abcdefghijk ábcdefghijkl {Q_RRF}")]
    found = golden_quoted_findings(queries, chunks, {})
    assert [q["query_id"] for q in found[0]["quoted"]] == ["twelve", "other"]


def test_warning_text() -> None:
    findings: list[dict[str, Any]] = [
        {"check": "golden-queries-quoted", "path": "leak/notes.md",
         "quoted": [{"query_id": "backup", "rank_in_top_k": 2},
                    {"query_id": "rrf", "rank_in_top_k": None}]},
        {"check": "golden-queries-quoted", "path": "leak/more.md",
         "quoted": [{"query_id": "a", "rank_in_top_k": 1}, {"query_id": "b", "rank_in_top_k": 9}]},
    ]
    assert findings_warning_text(findings) == (
        "2 document(s) quote 2 or more golden queries verbatim (golden-queries-quoted).\n"
        "  leak/notes.md\n"
        "    backup (rank 2)\n"
        "    rrf (not in top_k)\n"
        "  leak/more.md\n"
        "    a (rank 1)\n"
        "    b (rank 9)\n"
        "  Either these notes leaked into the corpus, or the queries came from them\n"
        "  and the documents belong in `expected`. groove eval changes neither."
    )
