"""`groove config show|check`, --version, and the CLI error contract (cli.md §2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groove_cli import __version__
from groove_cli.cli import app, invoked_command, narrowed

runner = CliRunner()


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"groove {__version__}\n"


def resolved(shown: dict[str, object]) -> dict[str, object]:
    """A setting's resolved value and source (config show also prints what it declares)."""
    return {"value": shown["value"], "source": shown["source"]}


def test_config_show_json_reports_every_source(workdir: Path) -> None:
    (workdir / "groove.toml").write_text('[search.retrieval]\npreset = "balanced"\nmin_score = 0.1\n'
                                         '[search.fusion]\nmethod = "rrf"\n')
    result = runner.invoke(app, ["config", "show", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["config_file"] == str(workdir / "groove.toml")
    settings = doc["settings"]
    assert resolved(settings["search.retrieval.min_score"]) == {"value": 0.1, "source": "file"}
    assert resolved(settings["search.retrieval.dense_top_k"]) == {"value": 40, "source": "preset"}
    assert resolved(settings["search.retrieval.vector_weight"]) == {"value": 1.0, "source": "default"}
    assert resolved(settings["search.fusion.method"]) == {"value": "rrf", "source": "file"}
    assert resolved(settings["search.fusion.rrf_k"]) == {"value": 60.0, "source": "default"}
    assert settings["search.fusion.rrf_k"]["help"] == "RRF constant."
    assert settings["search.fusion.rrf_k"]["flag"] == "--rrf-k"
    assert settings["search.fusion.rrf_k"]["ranks"] is True
    assert settings["threads"]["ranks"] is False and "flag" not in settings["threads"]
    assert all(shown["help"] for shown in settings.values())  # every key explains itself


def test_config_show_text(workdir: Path) -> None:
    (workdir / "groove.toml").write_text("[search.mmr]\nenabled = true\n")
    result = runner.invoke(app, ["config", "show"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == f"# config file: {workdir / 'groove.toml'}"
    assert any(line.split() == ["search.mmr.enabled", "=", "true", "(file)"] for line in lines)
    assert any(line.split() == ["search.mmr.lambda", "=", "0.7", "(default)"] for line in lines)


def test_config_show_names_the_store_url_in_effect(workdir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 28: `store.url` showed unset while GROOVE_DB_URL was set
    (workdir / "groove.toml").write_text('[store]\nurl = "postgresql://file@h/db"\n')
    monkeypatch.setenv("GROOVE_DB_URL", "postgresql://me:s3cret@db.example:5432/notes")

    def shown(*args: str) -> dict[str, object]:
        result = runner.invoke(app, [*args, "config", "show", "--format", "json"])
        assert result.exit_code == 0, result.output
        return resolved(json.loads(result.stdout)["settings"]["store.url"])

    assert shown() == {"value": "postgresql://me:***@db.example:5432/notes",
                       "source": "env GROOVE_DB_URL"}
    assert shown("--db", "postgresql://x:pw@other/db") == {
        "value": "postgresql://x:***@other/db", "source": "flag"}
    text = runner.invoke(app, ["config", "show"]).stdout
    assert any(line.split() == ["store.url", "=", '"postgresql://me:***@db.example:5432/notes"',
                                "(env", "GROOVE_DB_URL)"] for line in text.splitlines())
    assert "s3cret" not in text
    monkeypatch.delenv("GROOVE_DB_URL")
    assert shown() == {"value": "postgresql://file@h/db", "source": "file"}


def test_config_check_ok_and_invalid(workdir: Path) -> None:
    cfg = workdir / "groove.toml"
    cfg.write_text("[search.mmr]\nlambda = 0.5\n")
    ok = runner.invoke(app, ["config", "check"])
    assert ok.exit_code == 0 and ok.stdout == f"{cfg}: ok\n"
    cfg.write_text("[search.mmr]\nlamda = 0.5\n")
    bad = runner.invoke(app, ["config", "check"])
    assert bad.exit_code == 1
    assert bad.stdout == ""
    assert bad.stderr == f'groove: error: {cfg}: unknown key "search.mmr.lamda" (did you mean "lambda"?)\n'


def test_missing_config_flag_is_exit_1(workdir: Path) -> None:
    result = runner.invoke(app, ["--config", "missing.toml", "config", "check"])
    assert result.exit_code == 1
    assert result.stderr == "groove: error: --config path not found: missing.toml\n"


def test_real_process_prints_no_traceback_and_usage_errors_exit_2(workdir: Path) -> None:
    (workdir / "groove.toml").write_text("[search.retrieval]\nmode = 3\n")
    proc = subprocess.run([sys.executable, "-m", "groove_cli", "config", "check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("groove: error: ")
    usage = subprocess.run([sys.executable, "-m", "groove_cli", "config", "show", "--bogus"],
                           capture_output=True, text=True, check=False)
    assert usage.returncode == 2
    assert "Traceback" not in usage.stderr and "--bogus" in usage.stderr


# ------------------------------------------------------------------ the narrowed entry point


@pytest.mark.parametrize(("args", "name"), [
    (["search", "q", "--mode", "fts"], "search"),
    (["--config", "x.toml", "--db", "y.db", "eval", "--golden", "g.yml"], "eval"),
    (["--db=y.db", "get", "notes.md:3"], "get"),
    (["--help"], None),
    (["--version"], None),
    (["--config"], None),
    ([], None),
])
def test_invoked_command_skips_the_global_options(args: list[str], name: str | None) -> None:
    assert invoked_command(args) == name


def test_narrowed_builds_only_the_command_run_and_behaves_the_same(workdir: Path) -> None:
    full = [c.name for c in app.registered_commands] + [g.name for g in app.registered_groups]
    subset = narrowed(app, ["--db", "x.db", "search", "q"])
    assert [c.name for c in subset.registered_commands] == ["search"]
    assert subset.registered_groups == []
    assert [c.name for c in app.registered_commands] + [g.name for g in app.registered_groups] \
        == full  # the module's app is not changed
    assert [g.name for g in narrowed(app, ["eval", "--help"]).registered_groups] == ["eval"]
    for args in (["search", "--help"], ["eval", "--help"], ["config", "check"],
                 ["search", "--mode", "bogus", "q"]):
        assert runner.invoke(narrowed(app, args), args).output == runner.invoke(app, args).output
    # what it cannot name runs on the full tree: the typo still gets its suggestion
    assert narrowed(app, ["serch", "q"]) is app and narrowed(app, ["--help"]) is app


# ----------------------------------------------------------------------------- issue 28

_AS_GROOVE = "import sys; sys.argv[0] = 'groove'; from groove_cli.cli import main; main()"
"""Run the CLI under its installed name: the completion variable is derived from it."""


def _complete(words: str, cword: int) -> list[str]:
    env = {**os.environ, "_GROOVE_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(cword)}
    proc = subprocess.run([sys.executable, "-c", _AS_GROOVE], capture_output=True, text=True,
                          env=env, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_shell_completion_completes_commands_options_and_subcommands() -> None:
    assert _complete("groove sea", 1) == ["search"]
    assert _complete("groove search --for", 2) == ["--format"]
    assert _complete("groove eval comp", 2) == ["compare"]
    script = subprocess.run([sys.executable, "-c", _AS_GROOVE, "--show-completion", "bash"],
                            capture_output=True, text=True, timeout=60, check=True).stdout
    assert "_GROOVE_COMPLETE=complete_bash" in script and "complete " in script
    assert "--install-completion" in runner.invoke(app, ["--help"]).stdout


def test_help_into_a_closed_pipe_exits_0() -> None:
    # `groove --help | head -1` under `set -o pipefail` (rich ends a broken pipe with exit 1)
    for args in (["--help"], ["search", "--help"]):
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            proc = subprocess.run([sys.executable, "-m", "groove_cli", *args], stdout=write_end,
                                  stderr=subprocess.PIPE, text=True, timeout=60, check=False)
        finally:
            os.close(write_end)
        assert (proc.returncode, proc.stderr) == (0, ""), args
