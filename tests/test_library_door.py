"""The library door reads no ambient state (issue 39): `groove_cli.open(kb)` uses what it is
given plus the built-in defaults, whatever folder the process is in, and a library call writes
nothing to stderr unless its caller installs a handler on the `groove` logger.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

import groove_cli
from groove_cli import messages
from groove_cli.errors import UsageError
from groove_cli.results import Results

QUERY = "how do retry budgets stop retry storms?"


def ranked(results: Results) -> list[tuple[str, float]]:
    return [(hit.path, round(hit.score, 9)) for hit in results]


def test_open_gives_the_same_hits_from_a_folder_whose_groove_toml_says_fts(
        sample_kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fts_folder = tmp_path / "fts-project"
    fts_folder.mkdir()
    (fts_folder / "groove.toml").write_text('[search.retrieval]\nmode = "fts"\n')
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    with groove_cli.open(sample_kb) as kb:
        elsewhere = kb.search(QUERY, limit=10)
    monkeypatch.chdir(fts_folder)
    with groove_cli.open(sample_kb) as kb:
        there = kb.search(QUERY, limit=10)
    with groove_cli.open(sample_kb, discover=True) as kb:  # as the command line resolves it
        discovered = kb.search(QUERY, limit=10)
    assert there.params.mode == elsewhere.params.mode == "hybrid"
    assert ranked(there) == ranked(elsewhere) and ranked(there)
    assert discovered.params.mode == "fts" and ranked(discovered) != ranked(there)


def test_open_without_a_kb_asks_for_one_instead_of_looking_around(
        sample_kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(sample_kb / "search")
    with pytest.raises(UsageError, match=r"needs the KB folder, db= or config="):
        groove_cli.open()  # the working folder is inside the KB: not looked at
    with groove_cli.open(discover=True) as kb:  # the command line's way finds it
        assert kb.kb == sample_kb.resolve()


@pytest.fixture
def no_handler(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The `groove` logger as a library user finds it: a NullHandler, nothing else."""
    logger = messages.LOGGER
    monkeypatch.setattr(logger, "handlers", [h for h in logger.handlers
                                             if not isinstance(h, messages.StderrLines)])
    monkeypatch.setattr(logger, "propagate", True)
    monkeypatch.setattr(logger, "level", logging.NOTSET)
    yield


def test_index_writes_nothing_to_stderr_without_a_handler(
        sample_kb: Path, no_handler: None, capfd: pytest.CaptureFixture[str]) -> None:
    (sample_kb / "new-note.md").write_text("# New\n\nA note about retry budgets.\n")
    with groove_cli.open(sample_kb) as kb:
        report = kb.index(quiet=False, text_only=True)
    assert report.updated == 1
    assert capfd.readouterr().err == ""


def test_a_handler_the_caller_installs_gets_the_lines(
        sample_kb: Path, no_handler: None, capfd: pytest.CaptureFixture[str]) -> None:
    (sample_kb / "new-note.md").write_text("# New\n\nA note about retry budgets.\n")
    seen: list[str] = []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    messages.LOGGER.addHandler(handler)
    messages.LOGGER.setLevel(logging.INFO)
    try:
        with groove_cli.open(sample_kb) as kb:
            kb.index(quiet=False, text_only=True)
    finally:
        messages.LOGGER.removeHandler(handler)
    assert any(line.startswith("Indexing ") for line in seen), seen
    assert capfd.readouterr().err == ""
