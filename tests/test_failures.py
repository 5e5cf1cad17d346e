"""The environment fails (full disk, read-only storage, a file that is not an index, a closed
stdout): every case ends in one `groove: error:` line and exit 1, never a traceback (issue 15)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from groove_cli import messages
from groove_cli.failures import translate
from tests import test_index
from tests.test_index import Groove, make_groove

# the tiny model and the indexed sample KB of test_index.py, shared rather than rebuilt
tiny_model = test_index.tiny_model
groove = test_index.groove
indexed = test_index.indexed


def one_error(stderr: str) -> str:
    """The single `groove: error:` line; asserts there is no traceback."""
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("groove: error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


# ------------------------------------------------------------------ translation


def test_disk_full_and_read_only_errors_are_translated() -> None:
    full = translate(apsw.FullError("FullError: database or disk is full"))
    assert full is not None and full.message == "the disk is full: database or disk is full"
    written = translate(OSError(errno.ENOSPC, "No space left on device", "/x/i.db.vectors.npy"))
    assert written is not None
    assert written.message == "the disk is full (/x/i.db.vectors.npy): No space left on device"
    short = translate(OSError("1048576 requested and 4096 written"))
    assert short is not None and short.message == (
        "the disk is full: 1048576 requested and 4096 written")
    ro = translate(apsw.ReadOnlyError("ReadOnlyError: attempt to write a readonly database"))
    assert ro is not None and ro.message.startswith("the index cannot be written")
    denied = translate(PermissionError(errno.EACCES, "Permission denied", "/kb/.groove-eval-history.json"))
    assert denied is not None
    assert denied.message == "cannot use (/kb/.groove-eval-history.json): Permission denied"
    assert translate(KeyError("mrr")) is None  # a bug keeps its traceback


# ------------------------------------------------------------------ stdout


def _search_subprocess(groove: Groove, **popen: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "groove_cli", "--db", str(groove.db), "search", "cats",
         "--mode", "fts"], cwd=groove.work, text=True, timeout=120, check=False, **popen)


def test_output_to_a_full_device_is_one_line(indexed: Groove) -> None:
    with open("/dev/full", "w") as full:
        proc = _search_subprocess(indexed, stdout=full, stderr=subprocess.PIPE)
    assert proc.returncode == 1
    assert one_error(proc.stderr) == "groove: error: cannot write the output: No space left on device"
    assert "Exception ignored" not in proc.stderr


def test_closed_stdout_is_one_line(indexed: Groove) -> None:
    proc = _search_subprocess(indexed, stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1))
    assert proc.returncode == 1
    assert one_error(proc.stderr) == "groove: error: cannot write the output: standard output is closed"


def test_a_reader_that_stops_early_gets_no_error_line_and_exit_0(indexed: Groove) -> None:
    # `groove search … | head -1`: the reader is gone before groove writes; nothing to report,
    # and a script under `set -o pipefail` goes on (issue 28)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = _search_subprocess(indexed, stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert proc.returncode == 0
    assert proc.stderr == ""


# ------------------------------------------------------------------ not an index


def test_db_naming_a_folder_or_another_file(indexed: Groove, tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("not a database, and not to be overwritten\n", encoding="utf-8")
    for db in (Path("/"), other):
        for args in (("search", "cats"), ("status",), ("index", "--kb-path", str(indexed.kb))):
            result = indexed.run(*args, db=db)
            assert result.exit_code == 1, (db, args)
            line = one_error(result.stderr)
            assert str(db) in line
    assert other.read_text(encoding="utf-8") == "not a database, and not to be overwritten\n"
    folder = indexed.run("search", "cats", db=Path("/"))
    assert one_error(folder.stderr) == "groove: error: --db / is a folder, not an index file"


def test_empty_index_file_is_named_not_a_schema_upgrade(indexed: Groove, tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    result = indexed.run("status", db=empty)
    assert result.exit_code == 1
    assert one_error(result.stderr) == (
        f"groove: error: the index at {empty} is an empty file (0 bytes), not an index")
    assert "schema version" not in result.stderr


def test_lock_file_being_a_folder(indexed: Groove) -> None:
    lock = indexed.db.with_name(indexed.db.name + ".lock")
    lock.unlink()
    lock.mkdir()
    result = indexed.index()
    assert result.exit_code == 1
    assert one_error(result.stderr) == f"groove: error: the lock file {lock} is a folder"


# ------------------------------------------------------------------ read-only storage


@pytest.fixture
def read_only_copy(indexed: Groove, tmp_path: Path) -> Iterator[Path]:
    """A copy of the index on storage groove cannot write: a read-only bind mount when run
    as root (root ignores file modes), else a folder and file without write permission."""
    src = tmp_path / "ro-src"
    src.mkdir()
    for side in indexed.db.parent.glob(indexed.db.name + "*"):
        if not side.name.endswith(("-shm", "-wal", ".lock")):
            shutil.copy2(side, src / side.name)
    if os.geteuid() != 0:
        (src / indexed.db.name).chmod(0o444)
        src.chmod(0o555)
        yield src / indexed.db.name
        src.chmod(0o755)
        return
    mount = tmp_path / "ro"
    mount.mkdir()
    if subprocess.run(["mount", "--bind", str(src), str(mount)], check=False,
                      capture_output=True).returncode != 0:
        pytest.skip("cannot make a read-only mount here")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(mount)], check=True,
                       capture_output=True)
        yield mount / indexed.db.name
    finally:
        subprocess.run(["umount", str(mount)], check=False, capture_output=True)


def test_search_status_doctor_work_read_only(indexed: Groove, read_only_copy: Path) -> None:
    for args in (("search", "cats", "--mode", "fts"), ("search", "cats"), ("status",),
                 ("doctor",)):
        result = indexed.run(*args, db=read_only_copy)
        assert result.exit_code == 0, (args, result.stderr)
    assert sorted(p.name for p in read_only_copy.parent.iterdir()) == sorted(
        [read_only_copy.name, read_only_copy.name + ".vectors.npy",
         read_only_copy.name + ".vectors-ids.npy", read_only_copy.name + ".vectors.json"])


def test_index_on_read_only_storage_is_a_clear_error(indexed: Groove, read_only_copy: Path) -> None:
    result = indexed.index(db=read_only_copy)
    assert result.exit_code == 1
    assert one_error(result.stderr) == (
        f"groove: error: cannot write the index at {read_only_copy}: the file or its folder "
        "is read-only")


# ------------------------------------------------------------------ terminal escapes


def test_stderr_lines_escape_control_characters() -> None:
    lines: list[str] = []
    messages.set_sink(lines.append)
    try:
        messages.warning("bad \x1b[2J note\x07")
        messages.always("explain: \x00")
    finally:
        messages.set_sink(None)
    assert lines == ["groove: warning: bad \\x1b[2J note\\x07", "explain: \\x00"]


def test_index_verbose_prints_one_line_per_file(tiny_model: Path, workdir: Path,
                                                tmp_path: Path) -> None:
    """Item 10: a file name holding a newline or ESC is one escaped line."""
    groove = make_groove(workdir, tmp_path, tiny_model)
    (groove.kb / "two\nlines\x1b.md").write_text("# Cats\n\ncats sleep a lot\n", encoding="utf-8")
    (groove.kb / "empty\n.md").write_text("", encoding="utf-8")
    result = groove.index_ok("--verbose")
    assert "  indexed: two\\nlines\\x1b.md (1 chunks)" in result.stderr.splitlines()
    assert "Skipping empty\\n.md: no embeddable chunks" in result.stderr.splitlines()


# ------------------------------------------------------------------ smaller ones (item 12)


def test_model_naming_a_file(indexed: Groove) -> None:
    result = indexed.run("search", "cats", "--model", str(indexed.work / "groove.toml"))
    assert result.exit_code == 1
    assert one_error(result.stderr) == (
        f"groove: error: {indexed.work / 'groove.toml'} is a file, not a model directory")


def test_config_check_and_doctor_check_the_configured_reranker(indexed: Groove,
                                                               tmp_path: Path) -> None:
    missing = tmp_path / "no-such-reranker"
    indexed.configure(f'reranker = "{missing}"\n')
    check = indexed.run("config", "check")
    assert check.exit_code == 1
    assert one_error(check.stderr) == (
        f'groove: error: {indexed.work / "groove.toml"}: reranker = "{missing}": model directory '
        f"{missing} does not exist")
    doctor = indexed.run("doctor", "--format", "json")
    assert doctor.exit_code == 1
    finding = json.loads(doctor.stdout)["findings"][0]
    assert (finding["check"], finding["severity"], finding["samples"]) == (
        "reranker-unavailable", "warning", [str(missing)])


def test_hub_download_fails_fast_with_one_line(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A blocked network cost 25 s of retries and a page of raw DNS errors: now one quick
    connection probe decides, before the hub client (and its retries) is ever called."""
    import socket

    import huggingface_hub

    from groove_cli.errors import ModelError
    from groove_cli.models import resolve_model

    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: nothing listens
    probes: list[object] = []
    downloads: list[object] = []
    sleeps: list[float] = []
    connect = socket.create_connection

    def counted_connect(address: tuple[str, int], *args: object, **kwargs: object) -> object:
        probes.append(address)
        return connect(address, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "create_connection", counted_connect)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download",
                        lambda *args, **kwargs: downloads.append(kwargs))
    monkeypatch.setattr(time, "sleep", sleeps.append)  # a retry would back off
    with pytest.raises(ModelError) as caught:
        resolve_model("bge-small-en-v1.5", tmp_path / "models", offline=False)
    assert (probes, downloads, sleeps) == ([("127.0.0.1", 9)], [], [])
    assert caught.value.message.startswith(
        "cannot download BAAI/bge-small-en-v1.5: the model hub is unreachable: cannot connect to "
        "127.0.0.1:9 (")
    assert "\n" not in caught.value.message


def test_a_query_starting_with_a_dash_points_at_double_dash(indexed: Groove) -> None:
    result = indexed.run("search", "-draft notes")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "groove: error: No such option: -d",
        'groove: hint: a query that starts with "-" goes after --, e.g. '
        '`groove search -- "-draft notes"`']
    assert "goes after --" in " ".join(indexed.run("search", "--help").stdout.split())


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB file system (tmpfs), where a first index does not fit; needs root."""
    mount = tmp_path / "tiny-disk"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
            check=False, capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small file system here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False, capture_output=True)


def test_index_on_a_full_disk_is_one_line(groove: Groove, tiny_disk: Path) -> None:
    """Item 4: apsw.FullError / a short snapshot write ended in a traceback."""
    for i in range(60):  # enough notes that the index outgrows 256 KiB
        (groove.kb / f"n{i}.md").write_text(f"# Note {i}\n\n" + "cats and dogs " * 200,
                                           encoding="utf-8")
    result = groove.index(db=tiny_disk / "index.db")
    assert result.exit_code == 1
    assert one_error(result.stderr).startswith("groove: error: the disk is full")


def test_usage_errors_are_groove_error_lines(indexed: Groove) -> None:
    """click's boxed usage errors become the one-line contract, global options included."""
    bogus = indexed.run("--bogus")
    assert bogus.exit_code == 2
    assert bogus.stderr.splitlines() == ["groove: error: No such option: --bogus",
                                         "groove: hint: see `groove --help`"]
    bad_value = indexed.run("search", "cats", "--limit", "many")
    assert bad_value.exit_code == 2
    assert one_error(bad_value.stderr).startswith("groove: error: Invalid value for '--limit'")
