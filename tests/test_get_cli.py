"""`groove get`: a note or a hit's lines from the file, and the round trip with `search`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from groove_cli.cli import app
from groove_cli.get import Location, parse_location
from tests.test_search_cli import hits_and_locations
from tests.waiting import HANG_GUARD_S

runner = CliRunner()

NOTE = ("---\ntitle: Backups\n---\n\nIntro paragraph that is long enough to stay a chunk of "
        "its own.\n\n## Nightly\n\nThe nightly job copies the database to cold storage at "
        "02:00.\nIt keeps thirty copies.\n\n## Restore\n\nRestore by replaying the newest copy "
        "and then the write-ahead log.\n")


def get(*args: str, config: Path | None = None) -> Result:
    head = ["--config", str(config)] if config is not None else []
    return runner.invoke(app, [*head, "get", *args])


@pytest.fixture(scope="module")
def config_file(real_models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A groove.toml that only points at the test models cache."""
    path = tmp_path_factory.mktemp("config") / "groove.toml"
    path.write_text(f"models_dir = {json.dumps(str(real_models_dir))}\n", encoding="utf-8")
    return path


@pytest.fixture
def note(workdir: Path) -> Path:
    path = workdir / "kb" / "ops" / "backup.md"
    path.parent.mkdir(parents=True)
    path.write_text(NOTE, encoding="utf-8")
    return path


@pytest.mark.parametrize(("text", "expected"), [
    ("a/b.md", Location("a/b.md")),
    ("a/b.md:12", Location("a/b.md", 12)),
    ("a/b.md:12:3", Location("a/b.md", 12, 3)),
    ("a b/c.md:7  § Heading: with colon", Location("a b/c.md", 7)),
    ("c:/x.md:2", Location("c:/x.md", 2)),
])
def test_parse_location(text: str, expected: Location) -> None:
    assert parse_location(text) == expected


def test_whole_note_and_count(note: Path) -> None:
    whole = get("kb/ops/backup.md")
    assert whole.exit_code == 0, whole.output
    assert whole.stdout == NOTE  # piped: the text as is, no numbers, no escapes
    lines = get("kb/ops/backup.md:7:2")
    assert lines.stdout == "## Nightly\n\n"


def test_line_alone_reads_the_chunk_there(note: Path) -> None:
    # line 7 is the Nightly heading: its chunk ends at line 10, before the Restore heading
    result = get("kb/ops/backup.md:7", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc == {"path": str(note.resolve()), "line_start": 7, "line_end": 10,
                   "content": "## Nightly\n\nThe nightly job copies the database to cold storage "
                              "at 02:00.\nIt keeps thirty copies."}


def test_kb_relative_path_and_errors(note: Path, workdir: Path) -> None:
    found = get("ops/backup.md:12:1", "--kb-path", str(workdir / "kb"))
    assert found.exit_code == 0 and found.stdout == "## Restore\n"
    missing = get("ops/nothing.md:3")
    assert missing.exit_code == 1 and missing.stdout == ""
    assert missing.stderr.splitlines()[-1] == (
        "groove: error: no such file: ops/nothing.md (looked in the working directory)")
    past = get("kb/ops/backup.md:99")
    assert past.exit_code == 1
    assert "has 14 lines; line 99 is past its end" in past.stderr
    zero = get("kb/ops/backup.md:0")
    assert zero.exit_code == 2 and "LINE and COUNT start at 1" in zero.stderr


def test_control_characters_are_escaped(workdir: Path) -> None:
    (workdir / "evil.md").write_text("safe\x1b[31m red\x07\n", encoding="utf-8")
    assert get("evil.md").stdout == "safe\\x1b[31m red\\x07\n"


def test_get_round_trips_search_text(golden_index: tuple[Path, Path], config_file: Path,
                                     workdir: Path) -> None:
    # each location line `search --format text` prints, given to `get` as printed, returns
    # the hit: its heading line first, and its content inside
    hits, shown = hits_and_locations(config_file, golden_index[1], "backup restore steps",
                                     "--mode", "fts", "--limit", "5")
    assert len(shown) == len(hits) == 5
    for line, hit in zip(shown, hits, strict=True):
        result = get(line, "--format", "json", config=config_file)
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert (doc["path"], doc["line_start"], doc["line_end"]) == (
            hit["abs_path"], hit["line_start"], hit["line_end"])
        first = doc["content"].split("\n")[0]
        if hit["heading"]:
            assert first.lstrip("# ") == hit["heading"]
        body = [x for x in hit["content"].split("\n") if x.strip() and not x.startswith("## ")]
        assert all(x.strip() in doc["content"] for x in body)


# A child process runs `groove get` with its stdout on a file (nothing is captured in memory)
# under tracemalloc, and reports the peak of Python allocations. First runs
# on a one-line note (argv[1]) do the imports, so the peak is the command's own.
STREAM_CHILD = r"""
import sys, tracemalloc
from groove_cli.cli import main


def run(*args):
    sys.argv = ["groove", "get", *args]
    try:
        main()
    except SystemExit as exit:
        return exit.code
    return 0


warm, *asked = sys.argv[1:]
for form in ("", ":1", ":1:1"):  # each way of reading imports what it needs
    run(warm + form)
tracemalloc.start()
code = run(*asked)
print(code, tracemalloc.get_traced_memory()[1], file=sys.stderr)
"""
BIG_LINE = b"the quick brown fox jumps over the lazy dog, line after line.\n"  # 62 bytes
BIG_LINES = 1_000_000
WARM = "# Warm up\n" * 3


@pytest.fixture(scope="module")
def big_note(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 62 MB note of a million short lines (over the index's 50 MB file cap), the last one
    different and without a newline."""
    path = tmp_path_factory.mktemp("big") / "big.md"
    with open(path, "wb") as handle:
        handle.write(BIG_LINE * (BIG_LINES - 1) + b"the end")
    return path


def _warm_up_note(folder: Path) -> str:
    path = folder / "warm-up.md"
    path.write_text("# Warm up\n", encoding="utf-8")
    return str(path)


def _get_streamed(*args: str) -> tuple[int, int, str]:
    """(exit code, peak traced bytes, stdout) of `groove get ARGS` in a child."""
    import subprocess
    import sys

    warm = _warm_up_note(Path(args[0].rsplit(":", 2)[0]).parent)
    proc = subprocess.run([sys.executable, "-c", STREAM_CHILD, warm, *args],
                          capture_output=True, text=True, timeout=HANG_GUARD_S, check=False)
    code, peak = proc.stderr.split()[-2:]
    return int(code), int(peak), proc.stdout


@pytest.mark.parametrize(("where", "expected"), [
    ("1:1", WARM + BIG_LINE.decode()),
    (f"{BIG_LINES - 1}:5", WARM + BIG_LINE.decode() + "the end\n"),
    # no chunk of a note over the index's cap: to the end of the file, two lines here
    (f"{BIG_LINES - 1}", WARM + BIG_LINE.decode() + "the end\n"),
])
def test_get_streams_the_lines_asked_for(big_note: Path, where: str, expected: str) -> None:
    code, peak, stdout = _get_streamed(f"{big_note}:{where}")
    assert (code, stdout) == (0, expected)
    assert peak < 1_000_000  # a block of the file and a line, not the file (62 MB)


def test_get_past_the_end_of_a_big_note_counts_without_holding_it(big_note: Path) -> None:
    code, peak, stdout = _get_streamed(f"{big_note}:{BIG_LINES + 1}:1")
    assert (code, stdout) == (1, WARM)
    assert peak < 1_000_000


def test_get_whole_note_is_written_as_it_is_read(tmp_path: Path) -> None:
    import subprocess
    import sys

    note = tmp_path / "long.md"
    note.write_bytes(BIG_LINE * 50_000)  # 3.1 MB: every line goes through the text writer
    out = tmp_path / "out.md"
    with open(out, "wb") as handle:
        proc = subprocess.run([sys.executable, "-c", STREAM_CHILD, _warm_up_note(tmp_path),
                               str(note)],
                              stdout=handle, stderr=subprocess.PIPE, text=True, timeout=HANG_GUARD_S,
                              check=False)
    code, peak = proc.stderr.split()[-2:]
    assert (int(code), out.read_bytes()) == (0, WARM.encode() + note.read_bytes())
    assert int(peak) < 500_000
