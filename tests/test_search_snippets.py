"""Hits you can scan (issue 28): snippets by default in `--format text` (≤ 12 lines per hit),
`--full` for whole chunks, `--format md` and `csv`, the title from the note's first H1, and an
empty result that says what to try."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from tests import test_index
from tests.test_index import Groove

tiny_model = test_index.tiny_model
groove = test_index.groove


def _filler(i: int) -> str:
    return f"Filler line {i} says nothing about the topic at hand."


SECTION = [
    *(_filler(i) for i in range(1, 5)),
    "Each client keeps a retry budget: retries may be at most 10 % of first attempts.",
    "When the retry budget is spent, the call fails fast instead of waiting.",
    *(_filler(i) for i in range(7, 14)),
    "Operators read the dashboard every morning, "
    + "and they compare this week with the last one, " * 4
    + "then they check whether the budget was spent on a single upstream.",
    *(_filler(i) for i in range(15, 20)),
    "A retry that succeeds still counts against the window.",
    *(_filler(i) for i in range(21, 27)),
    "Set the budget per upstream in clients.yaml.",
    *(_filler(i) for i in range(28, 31)),
]
ALERTS = "## Alerts\n\nRB-0210 is logged when the window is full."
NOTE = "\n".join([
    "# Upstream call limits", "", "Why a service limits its own calls to others.", "",
    "## How the budget works", "", *SECTION, "", ALERTS, ""])
"""A long note without frontmatter: its 30-line section is one chunk (the short Alerts section
is merged into it, index.md §3)."""


def _long_note(groove: Groove) -> Groove:
    (groove.kb / "runbooks").mkdir()
    (groove.kb / "runbooks" / "retry-budgets.md").write_text(NOTE, encoding="utf-8")
    groove.configure("[chunk]\nmax_tokens = 2000\n")  # the long section stays one chunk
    groove.index_ok()
    return groove


def _search(groove: Groove, *args: str) -> str:
    result = groove.run("search", "retry budget", "--mode", "fts", "--limit", "1", *args)
    assert result.exit_code == 0, result.stderr
    return result.stdout


SNIPPET = """\
# Upstream call limits
{path}:5  § How the budget works
score: 1.0000

  …
  Each client keeps a retry budget: retries may be at most 10 % of first attempts.
  When the retry budget is spent, the call fails fast instead of waiting.
  …
  …and they compare this week with the last one, and they compare this week with the last \
one, then they check whether the budget was spent on a single upstream.
  …
  A retry that succeeds still counts against the window.
"""
"""Lines in note order: the two with both words, the long line cut before its match, the one
with `retry`; `…` for skipped lines (the filler) and the cut start of the long line."""


def test_text_shows_a_snippet_of_a_long_note(groove: Groove, workdir: Path) -> None:
    _long_note(groove)
    out = _search(groove, "--format", "text")
    path = Path("..", "kb", "runbooks", "retry-budgets.md").as_posix()
    assert out == SNIPPET.format(path=path)
    assert len(out.splitlines()) <= 12
    # the title is the note's first heading (no frontmatter title), in JSON too
    assert json.loads(_search(groove))["results"][0]["title"] == "Upstream call limits"


def test_full_prints_the_whole_chunk(groove: Groove, workdir: Path) -> None:
    _long_note(groove)
    out = _search(groove, "--format", "text", "--full")
    path = Path("..", "kb", "runbooks", "retry-budgets.md").as_posix()
    assert out == (f"# Upstream call limits\n{path}:5  § How the budget works\n"
                   'score: 1.0000\nmatch_spans: "retry", "budget", "retry"\n\n'
                   + "\n".join(SECTION) + "\n\n" + ALERTS + "\n")


def test_every_hit_stays_within_twelve_lines(groove: Groove, workdir: Path) -> None:
    _long_note(groove)
    out = groove.run("search", "retry budget window", "--mode", "fts", "--format", "text",
                     "--explain").stdout
    assert out.splitlines()[3].startswith("explain: ")  # one more header line, fewer lines
    for block in out.split("\n\n# "):
        assert 3 <= len(block.strip("\n").splitlines()) <= 12, block


def test_markdown_and_csv(groove: Groove, workdir: Path) -> None:
    _long_note(groove)
    path = Path("..", "kb", "runbooks", "retry-budgets.md").as_posix()
    md = _search(groove, "--format", "md")
    assert md.splitlines()[:5] == [
        "## Upstream call limits", "",
        f"`{path}:5` · § How the budget works · score 1.0000", "",
        "> …"]
    assert md.splitlines()[5] == ("> Each client keeps a retry budget: retries may be at most "
                                  "10 % of first attempts.")
    rows = list(csv.reader(io.StringIO(_search(groove, "--format", "csv", "--full"))))
    assert rows[0] == ["rank", "path", "line_start", "line_end", "title", "heading", "score",
                       "relevance", "text"]
    assert rows[1] == ["1", path, "5", "40", "Upstream call limits",
                       "How the budget works", "1.0000", "", "\n".join(SECTION) + "\n\n" + ALERTS]


def test_no_hits_says_what_to_try(groove: Groove, workdir: Path) -> None:
    _long_note(groove)
    for fmt in ("text", "files", "md"):
        result = groove.run("search", "zeppelin", "--mode", "fts", "--format", fmt)
        assert result.exit_code == 0
        assert result.stdout == ""
        assert result.stderr == ("groove: note: no hits; try fewer or other words, or --mode "
                                 "hybrid (also matches by meaning)\n")
    doc = groove.run("search", "zeppelin", "--mode", "fts")
    assert json.loads(doc.stdout)["results"] == []
    assert json.loads(doc.stdout)["low_confidence"] is True
    filtered = groove.run("search", "retry", "--mode", "fts", "--tag-any", "nope", "--format", "text")
    assert filtered.stderr == "groove: note: no hits; try fewer filters (tags_any)\n"
