"""Deeply nested JSON as a baseline, eval history, `eval compare` input or golden file is one
clean error, never a RecursionError (issue 29 item 9)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from groove_cli.cli import app
from groove_cli.evaluate.history import LEGACY_HISTORY
from groove_cli.jsondoc import MAX_JSON_DEPTH, loads_bounded

runner = CliRunner()


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 5_000, 200_000])
def test_nesting_beyond_the_bound_is_a_value_error(depth: int) -> None:
    with pytest.raises(ValueError, match=f"nested more than {MAX_JSON_DEPTH} deep"):
        loads_bounded(nested(depth))
    with pytest.raises(ValueError, match="nested"):
        loads_bounded('{"a": ' * depth + "1" + "}" * depth)


def test_nesting_within_the_bound_parses() -> None:
    expected: list[object] = []
    for _ in range(MAX_JSON_DEPTH - 1):
        expected = [expected]
    assert loads_bounded(nested(MAX_JSON_DEPTH)) == expected


def _one_line_error(args: list[str], code: int) -> str:
    result = runner.invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and "RecursionError" not in result.output
    return result.stderr


def test_deep_baseline_and_compare_input(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    deep = tmp_path / "deep.json"
    deep.write_text(nested(100_000), encoding="utf-8")
    err = _one_line_error(["eval", "compare", str(deep), str(deep), "--kb-path", str(kb)], 2)
    assert err.startswith(f"groove: error: baseline {deep} is damaged: arrays or objects are "
                          f"nested more than {MAX_JSON_DEPTH} deep")
    (kb / ".groove-eval.yml").write_text("queries:\n  - id: a\n    query: x\n    expected: "
                                         "[{path: a.md}]\n", encoding="utf-8")
    err = _one_line_error(["--db", str(tmp_path / "x.db"), "eval", "--kb-path", str(kb),
                           "--baseline", str(deep)], 2)
    assert "is damaged: arrays or objects are nested" in err


def test_deep_history_is_set_aside_not_a_traceback(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / LEGACY_HISTORY).write_text('{"runs": ' + nested(100_000) + "}", encoding="utf-8")
    err = _one_line_error(["eval", "compare", "0", "1", "--kb-path", str(kb)], 2)
    assert "cannot be parsed (arrays or objects are nested more than" in err


def test_deep_json_golden_file(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    golden = tmp_path / "g.json"
    golden.write_text('{"queries": ' + nested(100_000) + "}", encoding="utf-8")
    err = _one_line_error(["--db", str(tmp_path / "x.db"), "eval", "--kb-path", str(kb),
                           "--golden", str(golden)], 1)
    assert err.startswith(f"groove: error: failed to parse golden file {golden}: arrays or "
                          "objects are nested")
