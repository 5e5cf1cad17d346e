"""One URL parser for `--db`, GROOVE_DB_URL and `[store] url` (issue 29 item 1).

A misspelt scheme once made `index` build an SQLite index in a folder named after the URL —
password included — and exit 0. Every source now goes through `dburl.parse_db_url`: a value
with a scheme or `user@` is a URL, an unaccepted one is a usage error, and no printed form of
it carries the password.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from groove_cli.cli import app
from groove_cli.dburl import looks_like_url, mask, mask_url, parse_db_url
from groove_cli.errors import UsageError
from tests.waiting import hang_guard

runner = CliRunner()
SECRET = "hunter2pw"
BAD = [f"postgresq://ann:{SECRET}@127.0.0.1:1/team",     # misspelt scheme
       f"postgresql:/ann:{SECRET}@127.0.0.1:1/team",      # one slash
       f"http://ann:{SECRET}@example.invalid/x",          # another scheme
       f"ann:{SECRET}@127.0.0.1/team"]                    # user@ without a scheme


@pytest.mark.parametrize("value", BAD)
def test_db_flag_with_a_bad_url_is_a_usage_error_and_writes_nothing(
        value: str, workdir: Path) -> None:
    kb = workdir / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("# A\n\nbody\n", encoding="utf-8")
    result = runner.invoke(app, ["--db", value, "index", "--kb-path", str(kb)])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith("groove: error: --db ") and "is not a Postgres URL" in lines[0]
    assert "accepted: postgresql://, postgres://" in lines[0]
    assert "ann:***@" in lines[0]
    assert SECRET not in result.stderr + result.stdout
    assert sorted(p.name for p in workdir.iterdir()) == ["kb"]  # no folder named after the URL
    assert sorted(p.name for p in kb.iterdir()) == ["a.md"]


@pytest.mark.parametrize("value", BAD)
def test_env_url_error_masks_the_password(value: str, workdir: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROOVE_DB_URL", value)
    result = runner.invoke(app, ["status", "--kb-path", str(workdir)])
    assert result.exit_code == 2
    assert result.stderr.startswith("groove: error: GROOVE_DB_URL ")
    assert SECRET not in result.stderr + result.stdout


@pytest.mark.parametrize("value", BAD)
def test_config_check_fails_on_a_bad_store_url(value: str, workdir: Path) -> None:
    (workdir / "groove.toml").write_text(f'[store]\nurl = "{value}"\n', encoding="utf-8")
    for command in (["config", "check"], ["config", "show"], ["config", "show", "--format",
                                                               "json"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 1, command
        assert "invalid config: store.url" in result.stderr
        assert SECRET not in result.stderr + result.stdout


def test_a_url_in_db_path_is_refused(workdir: Path) -> None:
    (workdir / "groove.toml").write_text(f'db_path = "{BAD[0]}"\n', encoding="utf-8")
    result = runner.invoke(app, ["config", "check"])
    assert result.exit_code == 1 and "db_path" in result.stderr
    assert SECRET not in result.stderr


def test_config_show_masks_an_accepted_url_with_odd_password(workdir: Path) -> None:
    (workdir / "groove.toml").write_text(
        '[store]\nurl = "postgresql://ann:p:s$s%40w!rd@127.0.0.1:1/team"\n', encoding="utf-8")
    for fmt in ("text", "json"):
        shown = runner.invoke(app, ["config", "show", "--format", fmt])
        assert shown.exit_code == 0
        assert "ann:***@127.0.0.1:1/team" in shown.stdout
        assert "s$s" not in shown.stdout and "w!rd" not in shown.stdout


@pytest.mark.parametrize("password", ["p@ss", "a/b", "x?y", "h#sh", "50%", "[v6", "%87x", "q?@"])
def test_a_raw_password_that_would_move_the_host_is_refused(password: str) -> None:
    """libpq would read these as another host or port and could echo part of the password
    in its error (or look up a host made of it): refused, masked, with the written form."""
    with pytest.raises(UsageError) as caught:
        parse_db_url(f"postgresql://ann:{password}@127.0.0.1:1/team", source="--db")
    assert caught.value.message.startswith("--db postgresql://ann:***@127.0.0.1:1/team is not")
    assert "%" in caught.value.message  # names the written form (%40, %2F, %25, …)


def test_the_rule() -> None:
    # paths stay paths: plain names, a drive letter, ./name@x, a colon without a slash
    for path in ("index.db", "C:/x/index.db", "./me@corp/x.db", "/tmp/a:b.db", "a:b.db"):
        assert not looks_like_url(path) and parse_db_url(path, source="--db") is None
    assert parse_db_url(" postgresql://u@h/d ", source="--db") == "postgresql://u@h/d"
    assert parse_db_url("POSTGRES://h/d", source="--db") == "postgres://h/d"  # libpq: lower
    for url in ("me@corp/x.db", "postgres:h/d", "ftp:/x", "postgresql://u:a b@h/d"):
        with pytest.raises(UsageError):
            parse_db_url(url, source="--db")


def test_mask_hides_any_password_shape() -> None:
    assert mask_url("postgresql://u:p a@h/d") == "postgresql://u:***@h/d"
    assert mask_url("postgresql://u:p@s@h/d") == "postgresql://u:***@h/d"
    assert mask("see http://u:x:y@h/d and v:w@h2") == "see http://u:***@h/d and v:***@h2"
    assert mask("postgresql://u@h/d") == "postgresql://u@h/d"
    assert mask("groove: note: Page 3: never used") == "groove: note: Page 3: never used"
    # a `:/` inside the password is not a scheme's: the scheme ends at the token's first `:`
    assert mask("ann:Qz:/7X@db.internal/team") == "ann:***@db.internal/team"
    assert mask("pg+x:/ann:Qz/a:/7X@h") == "pg+x:/ann:***@h"
    assert mask("x url=postgresql://ann:pw@h/db") == "x url=postgresql://ann:***@h/db"


def test_mask_is_linear_on_long_lines() -> None:
    """Every stderr line passes through `mask`: a long query or path quoted in a warning must
    not stall it (a regular expression over `user:pw@` once took seconds on 10,000 characters).

    The lines are 20-40 times that long: a quadratic mask would run for many minutes on them,
    far past the hang guard, while a linear one takes a fraction of a second."""
    lines = ("a:" * 100_000, "a:/" * 70_000 + "@", "x:y@z " * 40_000, "@" * 200_000)
    with hang_guard(what="mask over 200,000-character lines"):
        masked = [mask(line) for line in lines]
    assert masked[0] == lines[0] and masked[3] == lines[3]  # nothing in them to mask
