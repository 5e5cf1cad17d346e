"""Hits from notes moved, deleted or edited since the index read them are marked stale (issue
46 item 4, search.md §7), at one `stat` per shown note; `status --verbose` names the pending
files. On the indexed sample KB, with real files changed underneath it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import groove_cli
from groove_cli import results
from groove_cli.cli import app

runner = CliRunner()
REVIEW = "incidents/incident-review-process.md"


def stale_of(kb: Path, query: str = "Blameless") -> dict[str, bool]:
    with groove_cli.open(kb) as index:
        found = index.search(query, limit=5, mode="fts")
    return {hit.path: hit.stale for hit in found}


def test_fresh_hits_are_not_stale_and_cost_one_stat_per_note(
        sample_kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_stat = os.stat

    def counting(path: object, *args: object, **kwargs: object) -> os.stat_result:
        calls.append(str(path))
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(results.os, "stat", counting)
    with groove_cli.open(sample_kb) as index:
        found = index.search("retry", limit=5, mode="fts")
    hits = list(found)
    assert hits and not any(hit.stale for hit in hits)
    assert found.to_json()["results"][0]["stale"] is False
    notes = [path for path in calls if path.endswith(".md")]  # models and index files aside
    assert sorted(notes) == sorted({str(sample_kb / h.path) for h in hits})  # one per note


def test_an_edited_note_is_stale_until_index_reads_it_again(sample_kb: Path) -> None:
    note = sample_kb / REVIEW
    assert stale_of(sample_kb)[REVIEW] is False
    note.write_text(note.read_text() + "\nOne more line.\n")
    assert stale_of(sample_kb)[REVIEW] is True
    with groove_cli.open(sample_kb) as index:
        index.index()
    assert stale_of(sample_kb)[REVIEW] is False


def test_a_touched_but_unchanged_note_is_confirmed_by_index(sample_kb: Path) -> None:
    note = sample_kb / REVIEW
    os.utime(note)  # same bytes, a time after the index read it: a stat cannot tell them apart
    assert stale_of(sample_kb)[REVIEW] is True
    with groove_cli.open(sample_kb) as index:
        report = index.index()
    assert report.updated == 0  # nothing re-embedded, the row only confirmed
    assert stale_of(sample_kb)[REVIEW] is False


def test_a_moved_note_is_marked_in_json_and_text_with_a_note(sample_kb: Path) -> None:
    (sample_kb / REVIEW).rename(sample_kb / "incidents" / "reviews.md")
    result = runner.invoke(app, ["search", "--kb-path", str(sample_kb), "--mode", "fts",
                                 "--no-server", "Blameless"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    first = doc["results"][0]
    assert first["path"] == REVIEW and first["stale"] is True
    assert [h["stale"] for h in doc["results"][1:]] == [False] * (len(doc["results"]) - 1)
    assert doc["notes"] == [results.STALE_NOTE.format(count=1)]
    text = runner.invoke(app, ["search", "--kb-path", str(sample_kb), "--mode", "fts",
                               "--no-server", "--format", "text", "--no-color", "Blameless"])
    assert text.exit_code == 0, text.output
    location = text.stdout.splitlines()[1]
    assert location.startswith(f"golden/{REVIEW}:1") and location.endswith("[stale: changed since indexed]")
    assert "groove: note: 1 of these hits come from notes moved" in text.stderr


def test_status_verbose_names_the_pending_files(sample_kb: Path) -> None:
    (sample_kb / REVIEW).rename(sample_kb / "incidents" / "reviews.md")  # a rename
    (sample_kb / "operations" / "new-note.md").write_text("# Fresh\n\nA new note about pagers.\n")
    backup = sample_kb / "operations" / "backups" / "database-backups.md"
    backup.write_text(backup.read_text() + "\nRestores are tested monthly.\n")
    (sample_kb / "search" / "indexing" / "sqlite-vec-notes.md").unlink()
    args = ["status", "--kb-path", str(sample_kb), "--no-server"]
    doc = json.loads(runner.invoke(app, [*args, "--format", "json"]).stdout)
    assert doc["pending"]["files"] == [
        {"change": "renamed", "path": "incidents/reviews.md", "from": REVIEW},
        {"change": "changed", "path": "operations/backups/database-backups.md"},
        {"change": "new", "path": "operations/new-note.md"},
        {"change": "deleted", "path": "search/indexing/sqlite-vec-notes.md"},
    ]
    assert (doc["pending"]["new"], doc["pending"]["changed"], doc["pending"]["deleted"],
            doc["pending"]["renamed"]) == (1, 1, 1, 1)
    plain = runner.invoke(app, args).stdout.splitlines()
    verbose = runner.invoke(app, [*args, "--verbose"]).stdout.splitlines()
    assert not any(line.startswith("  renamed:") for line in plain)
    assert [line for line in verbose if line.startswith("  ")] == [
        f"  renamed: incidents/reviews.md (from {REVIEW})",
        "  changed: operations/backups/database-backups.md",
        "  new: operations/new-note.md",
        "  deleted: search/indexing/sqlite-vec-notes.md",
    ]
