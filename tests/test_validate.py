"""`groove validate` (validate.py): every kind of finding in a test KB with its `path:line`,
exit 1 on findings and 0 on a clean KB, JSON for CI, bad schemas as one-line errors, and
`groove index` warning on the same findings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import groove_cli
from groove_cli import messages
from groove_cli.cli import app
from groove_cli.validate import Rules, check_text

runner = CliRunner()

SCHEMA = """[frontmatter]
required = ["title", "date"]
types = ["title:string", "tags:list", "priority:int", "date:date", "draft:bool"]
enums = ["status:draft|review|published", "tags:ops|search|team"]
"""
GOOD = "---\ntitle: Good\ndate: 2025-05-12\ntags: [ops, team]\nstatus: draft\npriority: 2\n---\nbody\n"
NOTES = {
    "good.md": GOOD,
    "ops/missing.md": "---\ntitle:\nstatus: review\n---\nbody\n",
    "ops/types.md": ("---\ntitle: [a, b]\ndate: 2025-01-02\ntags: ops\npriority: high\n"
                     "draft: maybe\n---\nbody\n"),
    "team/enum.md": "---\ntitle: E\ndate: 2025-01-02\nstatus: wip\ntags: [ops, bogus]\n---\nx\n",
    "team/date.md": "---\ntitle: D\ndate: 05/12/2025\n---\nbody\n",
    "team/yaml.md": "---\ntitle: [unclosed\ndate: 2025-01-02\n---\nbody\n",
    "plain.md": "# No frontmatter\n\nbody\n",
}
EXPECTED = [
    "ops/missing.md:2: required key 'date' is missing",
    "ops/missing.md:2: required key 'title' is empty",
    "ops/types.md:2: title: expected string, got list",
    "ops/types.md:4: tags: expected list, got string ('ops')",
    "ops/types.md:5: priority: expected int, got string ('high')",
    "ops/types.md:6: draft: expected bool, got string ('maybe')",
    "plain.md:1: required key 'date' is missing",
    "plain.md:1: required key 'title' is missing",
    "team/date.md:3: date: '05/12/2025' does not match the date format %Y-%m-%d",
    "team/enum.md:4: status: 'wip' is not one of draft, review, published",
    "team/enum.md:5: tags: 'bogus' is not one of ops, search, team",
    # the parser's own words (libyaml's or PyYAML's) follow
    "team/yaml.md:3: frontmatter is not valid YAML: ",
]


def make_kb(root: Path, notes: dict[str, str], schema: str = SCHEMA) -> tuple[Path, Path]:
    kb = root / "kb"
    for rel, text in notes.items():
        (kb / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb / rel).write_text(text, encoding="utf-8")
    config = root / "groove.toml"
    config.write_text(schema, encoding="utf-8")
    return kb, config


def validate(kb: Path, config: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--config", str(config), "validate", str(kb), *args])
    return result.exit_code, result.stdout, result.stderr


def test_each_kind_of_finding_with_its_line(tmp_path: Path) -> None:
    kb, config = make_kb(tmp_path, NOTES)
    code, out, err = validate(kb, config)
    assert code == 1, err
    lines = out.splitlines()
    assert lines[:-2] == EXPECTED[:-1]
    assert lines[-2].startswith(EXPECTED[-1]) and "expected ',' or ']'" in lines[-2]
    assert lines[-1] == "7 notes checked: 12 findings in 6 notes"


def test_json_for_ci(tmp_path: Path) -> None:
    kb, config = make_kb(tmp_path, NOTES)
    code, out, _ = validate(kb, config, "--format", "json")
    assert code == 1
    document = json.loads(out)
    assert document["ok"] is False and document["notes"] == 7
    assert {f["kind"] for f in document["findings"]} == {"missing", "type", "enum", "date",
                                                          "yaml"}
    assert document["findings"][0] == {"path": "ops/missing.md", "line": 2, "key": "date",
                                       "kind": "missing",
                                       "message": "required key 'date' is missing"}


def test_a_clean_kb_exits_0(tmp_path: Path) -> None:
    kb, config = make_kb(tmp_path, {"good.md": GOOD, "ops/also.md": GOOD.replace("Good", "Also")})
    code, out, err = validate(kb, config)
    assert (code, out, err) == (0, "2 notes checked: no findings\n", "")
    code, out, _ = validate(kb, config, "--format", "json")
    assert code == 0 and json.loads(out) == {"ok": True, "notes": 2, "findings": [],
                                             "skipped": []}


@pytest.mark.parametrize(("schema", "code", "error"), [
    ("", 2, "groove: error: no frontmatter schema in {config}"),
    ('[frontmatter]\ntypes = ["title"]\n', 1,
     "groove: error: {config}: frontmatter.types entry 'title' is not KEY:TYPE"),
    ('[frontmatter]\ntypes = ["title:text"]\n', 1,
     "groove: error: {config}: frontmatter.types: unknown type 'text' for title"),
    ('[frontmatter]\nrequired = ["title"]\ndate_format = "YYYY"\n', 1,
     "groove: error: {config}: frontmatter.date_format 'YYYY' has no % directive"),
    ('[frontmatter]\nrequired = "title"\n', 1,
     "groove: error: {config}: invalid config: frontmatter.required: expected array of "
     "strings, got string"),
])
def test_bad_schemas_are_one_line_errors(tmp_path: Path, schema: str, code: int,
                                         error: str) -> None:
    kb, config = make_kb(tmp_path, {"good.md": GOOD}, schema)
    got, out, err = validate(kb, config)
    assert (got, out) == (code, "")
    assert err.splitlines()[0] == error.format(config=config)


@pytest.mark.parametrize(("schema", "error"), [
    ('[frontmatter]\ntypes = ["title"]\n',
     "groove: error: {config}: frontmatter.types entry 'title' is not KEY:TYPE"),
    ('[frontmatter]\nenums = ["status:"]\n',
     "groove: error: {config}: frontmatter.enums entry 'status:' is not KEY:a|b|c"),
    ('[frontmatter]\ndate_format = "YYYY"\n',
     "groove: error: {config}: frontmatter.date_format 'YYYY' has no % directive"),
])
def test_config_check_refuses_a_malformed_schema(tmp_path: Path, schema: str, error: str) -> None:
    _, config = make_kb(tmp_path, {"good.md": GOOD}, schema)
    result = runner.invoke(app, ["--config", str(config), "config", "check"])
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.splitlines()[0] == error.format(config=config)
    config.write_text(SCHEMA, encoding="utf-8")
    result = runner.invoke(app, ["--config", str(config), "config", "check"])
    assert (result.exit_code, result.stdout) == (0, f"{config}: ok\n")


def test_index_warns_on_the_same_findings(tmp_path: Path) -> None:
    kb, _ = make_kb(tmp_path, {"good.md": GOOD, "team/enum.md": NOTES["team/enum.md"]})
    with groove_cli.open(kb, db=tmp_path / "index.db", **{
            "frontmatter.enums": ["status:draft|review|published"],
            "frontmatter.required": ["title"]}) as index, messages.capture() as got:
        index.index(text_only=True)
    warnings = [m.text for m in got if m.kind == "warning"]
    assert warnings == ["frontmatter: team/enum.md:4: status: 'wip' is not one of draft, "
                        "review, published"]


def test_check_text_rules_directly() -> None:
    rules = Rules.parse(["title"], ["n:number", "when:date"], [], "%d.%m.%Y")
    text = "\ufeff---\ntitle: T\nn: 1.5\nwhen: 12.05.2025\n---\n"
    assert check_text(text, "a.md", rules) == []
    bad = check_text("---\ntitle: T\nwhen: 2025-05-12\n---\n", "a.md", rules)
    assert [f.line_text() for f in bad] == [
        "a.md:3: when: '2025-05-12' does not match the date format %d.%m.%Y"]
    assert check_text("---\n- a\n- b\n---\n", "l.md", rules)[0].line_text() == (
        "l.md:2: frontmatter is not a YAML mapping of keys")
