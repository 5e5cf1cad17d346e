"""The one output-file writer (issue 29 items 2 and 11): `--trec-run`, `--save-baseline` and
`$GITHUB_STEP_SUMMARY` never replace a link, FIFO or device, never traceback on a folder, and
a FIFO nobody reads never hangs eval."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from groove_cli.errors import GrooveError, UsageError
from groove_cli.outfile import output_kind, write_output
from groove_cli.render.markdown import append_step_summary
from tests.test_eval_cli import invoke, toml_config


def test_regular_file_is_replaced_atomically_keeping_its_mode(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "run.txt"
    target.write_bytes(b"old content, longer than the new one\n")
    os.chmod(target, 0o640)
    before = os.stat(target).st_ino
    write_output(target, b"new\n", flag="--trec-run", what="TREC run file")
    assert target.read_bytes() == b"new\n"
    assert os.stat(target).st_ino != before  # renamed over, not rewritten in place
    assert oct(os.stat(target).st_mode & 0o777) == oct(0o640)
    assert sorted(p.name for p in folder.iterdir()) == ["run.txt"]  # no temp file left


def test_symlink_is_refused_and_left_alone(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n", encoding="utf-8")
    link = tmp_path / "link.txt"
    link.symlink_to(victim)
    with pytest.raises(UsageError, match=r"--trec-run .*link\.txt is a symbolic link"):
        write_output(link, b"x\n", flag="--trec-run", what="TREC run file")
    assert link.is_symlink() and victim.read_text(encoding="utf-8") == "keep me\n"
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="symbolic link"):
        output_kind(dangling, "--save-baseline")
    assert not (tmp_path / "nowhere").exists()


def test_folder_and_missing_parent_are_one_line_usage_errors(tmp_path: Path) -> None:
    for path, match in ((Path("/"), "is a folder"), (tmp_path, "is a folder"),
                        (tmp_path / "no" / "run.txt", "does not exist")):
        with pytest.raises(UsageError, match=match) as caught:
            write_output(path, b"x", flag="--save-baseline", what="baseline")
        assert "\n" not in caught.value.message


def test_fifo_is_written_as_a_stream_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_output(fifo, b"1 Q0 a 1 1.0 groove\n", flag="--trec-run", what="TREC run file")
    reader.join(5)
    assert got == [b"1 Q0 a 1 1.0 groove\n"]
    assert output_kind(fifo, "--trec-run") == "stream"  # still a FIFO


def test_char_device_and_dash_are_streams(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    assert output_kind("/dev/null", "--trec-run") == "stream"
    write_output("/dev/null", b"x\n", flag="--trec-run", what="TREC run file")
    assert Path("/dev/null").is_char_device()
    write_output("-", b"to stdout\n", flag="--trec-run", what="TREC run file")
    write_output("/dev/stdout", b"again\n", flag="--trec-run", what="TREC run file")
    assert capsys.readouterr().out == "to stdout\nagain\n"
    link = tmp_path / "null-link"
    link.symlink_to("/dev/null")  # a link to a device is followed: nothing gets replaced
    assert output_kind(link, "--trec-run") == "stream"


def test_fifo_without_reader_does_not_hang_the_step_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "summary"
    os.mkfifo(fifo)
    with pytest.raises(GrooveError, match="no process is reading"):
        write_output(fifo, b"x", flag="$GITHUB_STEP_SUMMARY", what="summary", append=True,
                     wait=False)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(fifo))
    append_step_summary("## report")  # returns at once with a warning
    err = capsys.readouterr().err
    assert err.startswith("groove: warning: cannot append to $GITHUB_STEP_SUMMARY")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    append_step_summary("one")
    append_step_summary("two")
    assert summary.read_text(encoding="utf-8") == "one\ntwo\n"


def test_eval_refuses_bad_output_paths_before_running(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()  # no index, no golden file: the output paths are refused before either is read
    victim = tmp_path / "victim"
    victim.write_text("keep\n", encoding="utf-8")
    link = tmp_path / "link"
    link.symlink_to(victim)
    for flag, path in (("--trec-run", "/"), ("--save-baseline", "/"),
                       ("--trec-run", str(link)), ("--save-baseline", str(link))):
        result = invoke(["--db", str(tmp_path / "x.db"), "eval", "--kb-path", str(kb), flag,
                         path])
        assert result.exit_code == 2, (flag, path, result.output)
        assert result.stderr.startswith(f"groove: error: {flag} {path} is a ")
        assert "Traceback" not in result.output
    assert victim.read_text(encoding="utf-8") == "keep\n" and link.is_symlink()


def test_eval_with_a_fifo_step_summary_does_not_hang(
        golden_index: tuple[Path, Path], real_models_dir: Path, tmp_path: Path) -> None:
    """The whole command, in a child process with a deadline: a FIFO nobody reads as
    $GITHUB_STEP_SUMMARY is a warning and eval finishes (it used to block for ever)."""
    kb, db = golden_index
    fifo = tmp_path / "summary"
    os.mkfifo(fifo)
    config = tmp_path / "groove.toml"
    config.write_text(toml_config(real_models_dir), encoding="utf-8")
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(fifo), "GROOVE_OFFLINE": "1",
           "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.run(
        [sys.executable, "-m", "groove_cli", "--config", str(config), "--db", str(db), "eval",
         "--kb-path", str(kb), "--no-history", "--mode", "fts", "--format", "json"],
        env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "groove: warning: cannot append to $GITHUB_STEP_SUMMARY" in proc.stderr
    assert "no process is reading" in proc.stderr
