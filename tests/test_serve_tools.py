"""The MCP tools' parts in-process, on the real sample index: the argument check against the
published schemas, short hit ids (`get`/`fetch` by id, unknown and ambiguous ids), line caps
and numbers, and the languages the instructions name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import groove_cli
from groove_cli.errors import GrooveError, UsageError
from groove_cli.serve.service import Service, hit_id
from groove_cli.serve.tools import argument_problem, parsed_arguments, tool_schemas
from groove_cli.text.languages import languages

NOTE = "reliability/retry-budgets.md"


@pytest.fixture(scope="module")
def service(kb_env: tuple[Path, dict[str, str]]) -> Iterator[Service]:
    kb, _ = kb_env
    served = Service([groove_cli.open(kb, db=kb / ".groove.db"),
                      groove_cli.open(kb, db=kb / ".groove.db")])  # named kb and kb-2
    yield served
    served.close()


def test_arguments_are_checked_against_the_schemas() -> None:
    schemas = tool_schemas(["notes", "work"])
    search, multi = schemas["search"], schemas["multi_get"]
    takes = "search takes query (required), limit, mode, filters, kb"
    assert argument_problem("search", search, {"query": "x"}) is None
    assert argument_problem("search", search, {"query": "x", "limt": 3}) == (
        f"search has no argument 'limt'; {takes}")
    assert argument_problem("search", search, {}) == f"search needs query; {takes}"
    assert argument_problem("search", search, {"query": 3}) == "query must be text, not 3"
    assert argument_problem("search", search, {"query": "x", "limit": True}) == (
        "limit must be a whole number, not true")
    assert argument_problem("search", search, {"query": "x", "limit": 101}) == (
        "limit 101 must be from 1 to 100")
    assert argument_problem("search", search, {"query": "x", "mode": "psychic"}) == (
        "unknown mode 'psychic'; use one of: hybrid, vector, fts")
    assert argument_problem("search", search, {"query": "x", "kb": "nope"}) == (
        "unknown kb 'nope'; use one of: notes, work")
    assert argument_problem("search", search, {"query": "x" * 4001}) == (
        "query is longer than 4000 characters")
    assert argument_problem("multi_get", multi, {"paths": ["a.md", 3]}) == (
        "paths must be a list of text")
    assert argument_problem("multi_get", multi, {"paths": ["a.md"] * 201}) == (
        "paths lists 201 items; at most 200")
    assert argument_problem("multi_get", multi, {"paths": {"a": 1}}) == (
        'paths must be text or a list, not {"a": 1}')
    assert argument_problem("status", schemas["status"], {"kb": "x"}) == (
        "status has no argument 'kb'; status takes no arguments")
    # JSON nulls are arguments left out; objects and lists sent as JSON text are read
    assert parsed_arguments(search, {"query": "x", "mode": None, "filters": '{"topic": "a"}'}
                            ) == {"query": "x", "filters": {"topic": "a"}}
    assert parsed_arguments(multi, {"paths": '["a.md"]'}) == {"paths": ["a.md"]}
    assert parsed_arguments(multi, {"paths": "*.md"}) == {"paths": "*.md"}


def test_a_hit_id_reads_that_hit_in_any_kb_that_has_it(service: Service,
                                                        kb_env: tuple[Path, dict[str, str]]
                                                        ) -> None:
    kb, _ = kb_env
    lines = (kb / NOTE).read_text().split("\n")
    key = service.remember_hit("kb", NOTE, 10, 12)
    assert key == hit_id(NOTE, 10) and len(key) == 8
    note = service.get(key)
    assert (note["kb"], note["line_start"], note["line_end"], note["content"]) == (
        "kb", 10, 12, "\n".join(lines[9:12]))
    assert service.fetch("#" + key)["metadata"] == {"kb": "kb", "path": NOTE,
                                                    "line_start": 10, "line_end": 12}
    assert service.remember_hit("kb-2", NOTE, 10, 12) == key  # the same hit in another KB
    with pytest.raises(GrooveError, match=f"id {key} names 2 hits"):
        service.get(key)
    assert service.get(key, "kb-2")["kb"] == "kb-2"
    with pytest.raises(GrooveError, match="unknown id 00000000"):
        service.get("00000000")


def test_max_lines_and_line_numbers(service: Service, kb_env: tuple[Path, dict[str, str]]
                                    ) -> None:
    kb, _ = kb_env
    lines = (kb / NOTE).read_text().split("\n")
    total = len(lines) - (lines[-1] == "")
    whole = service.get(NOTE, max_lines=3, line_numbers=True)
    assert whole["content"] == "\n".join(f"{n}: {lines[n - 1]}" for n in (1, 2, 3))
    assert (whole["line_end"], whole["truncated"], whole["next"]) == (3, True,
                                                                      f"{NOTE}:4:{total - 3}")
    rest = service.get(whole["next"])
    assert rest["line_end"] == total and "truncated" not in rest
    assert "truncated" not in service.get(NOTE, max_lines=total)
    many = service.multi_get("reliability/*.md", max_lines=1)
    assert many["notes"] and all(n["line_start"] == n["line_end"] == 1 for n in many["notes"])
    for bad in (0, True, "3"):
        with pytest.raises(UsageError, match="max_lines"):
            service.get(NOTE, max_lines=bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="line_numbers must be true or false"):
        service.get(NOTE, line_numbers="yes")  # type: ignore[arg-type]


def test_the_instructions_name_each_kb(service: Service) -> None:
    text = service.instructions()
    assert "- kb: 27 notes, " in text and "- kb-2: 27 notes, " in text
    assert "Pass `kb` to pick one (default kb)." in text


def test_languages_of_a_sample() -> None:
    english = "The retry budget is the share of requests that may be retried, and it is ours."
    german = "Das Budget ist nicht für die Datenbank und das System, sondern auch für den Rest."
    french = "Le budget est une limite pour les appels dans le service et pas sur les autres."
    assert languages([english] * 8 + [german] * 2) == ("English", "German")
    assert languages([english] * 19 + [german]) == ("English",)  # under a tenth: left out
    assert languages([french, "検索の予算はチームで共有されます。", "重试预算由团队共享。"]) == (
        "Chinese", "French", "Japanese")
    assert languages(["Бюджет повторных попыток", "12345 ---", "xyz qwv"]) == (
        "Cyrillic", "Latin script")
    assert languages([]) == ()
