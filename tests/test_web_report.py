"""The web view with two KBs served (serve.md §4.1, §4.2, issue 42): the first holds two eval
runs with a settings change between them, the second a note the first lacks and no eval history.
Headless Chromium opens the history page (`/report`) and sees the plots drawn, the change
named, and a plain "run groove eval" for the KB without history; on the search page the KB
choice switches which KB is searched. The server loads matplotlib only once the history page
asks for pictures."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import blank, browser, keep  # noqa: F401  (browser: a fixture)
from tests.serve_helpers import Server, groove, make_kb, maps_library, serving
from tests.waiting import HANG_GUARD_S

WAIT_MS = HANG_GUARD_S * 1000
SECOND_NOTE = ("---\ntitle: Quokka ledger\n---\n\n## The quokka ledger\n\n"
               "Only the second KB keeps the quokka ledger: every quokka seen on the island, "
               "by date.\n")
SECOND_PATH = "wildlife/quokka-ledger.md"
HOSTILE_ID = 'q<img src=x onerror="alert(1)"><script>alert(2)</script>$x$'
MATPLOTLIB = "/matplotlib/"
"""A part of the path of matplotlib's compiled modules: mapped once it is imported."""


@pytest.fixture(scope="module")
def two_kbs(golden_index: tuple[Path, Path], real_models_dir: Path,
            tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """The sample KB after two eval runs (the defaults, then RRF: one settings change), and
    the sample KB plus one note, without eval history."""
    first, env = make_kb(golden_index, tmp_path_factory.mktemp("report-first"), real_models_dir)
    for flags in ((), ("--fusion", "rrf")):
        done = groove(env, "eval", "--kb-path", str(first), *flags)
        assert done.returncode == 0, done.stderr
    second, _ = make_kb(golden_index, tmp_path_factory.mktemp("report-second"), real_models_dir)
    (second / SECOND_PATH).parent.mkdir(parents=True, exist_ok=True)
    (second / SECOND_PATH).write_text(SECOND_NOTE, encoding="utf-8")
    done = groove(env, "--db", str(second / ".groove.db"), "index", "--kb-path", str(second),
                  "--quiet")
    assert done.returncode == 0, done.stderr
    return first, second, env


@pytest.fixture(scope="module")
def served(two_kbs: tuple[Path, Path, dict[str, str]]) -> Iterator[tuple[Server, bool]]:
    """`groove serve FIRST SECOND`, and whether matplotlib was loaded once it announced
    itself (before any request)."""
    first, second, env = two_kbs
    with serving(first, env, str(second)) as running:
        yield running, maps_library(running.proc.pid, MATPLOTLIB)


@pytest.fixture
def browser_page(browser: Any) -> Iterator[Any]:  # noqa: F811
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    yield opened
    context.close()
    assert errors == []  # no script error, no refused resource, no CSP violation


def test_the_server_loads_matplotlib_only_for_the_history_page(
        served: tuple[Server, bool]) -> None:
    server, loaded_at_start = served
    assert not loaded_at_start
    code, body, headers = server.get("/report")  # the page itself holds no data: no drawing
    assert code == 200 and "report.html" not in body.decode()
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert not maps_library(server.proc.pid, MATPLOTLIB)
    code, body, _ = server.get("/report/plots", kb="kb")
    assert code == 200, body
    document = json.loads(body)
    assert (document["kb"], document["runs"]) == ("kb", 2)
    assert [plot["id"] for plot in document["plots"]] == ["plot-history", "plot-query-deltas"]
    assert maps_library(server.proc.pid, MATPLOTLIB)
    code, body, _ = server.get("/report/plots", kb="nope")
    assert code == 400 and json.loads(body)["error"]["message"] == "unknown kb 'nope'"


def test_the_history_page_draws_the_runs(browser_page: Any, served: tuple[Server, bool],
                                         tmp_path: Path,
                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    server, _ = served
    page = browser_page
    page.goto(server.url + "/report")
    page.wait_for_selector("body[data-shown='kb']")
    assert page.text_content("#r-runs") == "2"
    for plot in ("plot-history", "plot-query-deltas"):
        image = page.locator(f"img#{plot}")
        size = image.evaluate("i => [i.naturalWidth, i.naturalHeight]")
        box = image.bounding_box()
        assert size[0] > 0 and size[1] > 0 and box["width"] > 0 and box["height"] > 0
    notes = page.locator("#section-plot-history ol.notes li").all_text_contents()
    assert len(notes) == 1 and notes[0].startswith("S1, before run 2: fusion.method: score → rrf")
    caption = page.text_content("#section-plot-query-deltas figcaption") or ""
    assert "against the previous run" in caption
    meta = page.text_content(".run-meta") or ""
    assert meta.startswith("newest run 20") and "model multilingual-e5-small" in meta
    # no path of this machine on the page: the KB is named by its served name only
    shown = str(page.text_content("body") or "")
    assert str(tmp_path_factory.getbasetemp()) not in shown
    png = tmp_path / "web-report.png"
    page.screenshot(path=str(png), full_page=True)
    assert not blank(png)
    keep(png, "web-report.png", shown=shown)


def test_a_kb_without_history_says_how_to_make_one(browser_page: Any,
                                                    served: tuple[Server, bool]) -> None:
    server, _ = served
    page = browser_page
    page.goto(server.url + "/report")
    page.wait_for_selector("body[data-shown='kb']")
    page.select_option("#kb", "kb-2")
    page.wait_for_selector("body[data-shown='kb-2']")
    assert page.text_content("#r-runs") == "0"
    text = page.text_content("#no-history") or ""
    assert text.startswith("No eval history for kb-2 yet. Run groove eval ")
    assert page.locator("#report img").count() == 0
    assert page.url.endswith("/report?kb=kb-2")
    # the way back to the search page keeps the KB
    page.click("#search-link")
    page.wait_for_selector("body[data-ready='1']")
    assert page.input_value("#kb") == "kb-2"


def search(page: Any, query: str) -> list[str]:
    """Type `query` into the box, press Enter, and return the hits' paths."""
    before = int(page.evaluate("Number(document.body.dataset.searched || 0)"))
    page.focus("#q")
    page.keyboard.press("Control+A")
    page.keyboard.type(query)
    page.keyboard.press("Enter")
    page.wait_for_selector(f"body[data-searched='{before + 1}']")
    return list(page.eval_on_selector_all("#results > li.hit",
                                          "items => items.map(i => i.dataset.path)"))


def test_the_kb_choice_switches_the_kb_searched(browser_page: Any,
                                                served: tuple[Server, bool]) -> None:
    server, _ = served
    page = browser_page
    page.goto(server.url + "/")
    page.wait_for_selector("body[data-ready='1']")
    assert page.text_content("#s-kbs") == "kb, kb-2"
    assert page.text_content("#s-notes") == "27"
    assert SECOND_PATH not in search(page, "quokka ledger")
    page.click("#filters summary")
    page.select_option("#kb", "kb-2")
    page.wait_for_selector("#s-notes:text-is('28')")  # the band follows the choice
    assert page.get_attribute("#report-link", "href") == "/report?kb=kb-2"
    assert search(page, "quokka ledger")[0] == SECOND_PATH
    # the hit is read from the KB it came from
    page.locator("#results > li.hit button.open").first.click()
    note = page.locator("#results > li.hit pre.note").first
    note.wait_for()
    assert "Only the second KB keeps the quokka ledger" in (note.text_content() or "")
    page.select_option("#kb", "kb")
    page.wait_for_selector("#s-notes:text-is('27')")
    assert SECOND_PATH not in search(page, "quokka ledger")


def test_the_history_pictures_keep_what_the_runs_hold_as_text() -> None:
    """A query id with markup is drawn as text: each plot is well-formed SVG with no element
    but matplotlib's, and the page's text (meta, notes) is what the runs hold."""
    pytest.importorskip("matplotlib")
    from groove_cli.pictures.eval_plots import history_document
    from tests.test_eval_baseline import make_run

    older, newer = make_run([0.0, 1.0]), make_run([1.0, 0.0])
    newer["timestamp"] = "2026-01-02T00:00:00.000000Z"
    for run in (older, newer):
        run["per_query"][0]["id"] = HOSTILE_ID
    document = history_document([newer, older])
    assert document["runs"] == 2
    assert [plot["id"] for plot in document["plots"]] == ["plot-history", "plot-query-deltas"]
    for plot in document["plots"]:
        tree = ET.fromstring(plot["svg"])
        tags = {element.tag.rpartition("}")[2] for element in tree.iter()}
        assert not tags & {"img", "script", "foreignObject"}, tags
    deltas = document["plots"][1]["svg"]
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in deltas
    assert history_document([]) == {"runs": 0, "meta": [], "plots": []}
