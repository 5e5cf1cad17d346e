"""The web view of `groove serve` (serve.md §4.1, issue 42) in a real browser: headless Chromium
opens the page of a real server on the sample KB, reads the status band, searches by typing,
opens a hit in place, and is photographed at desktop and phone widths; a note carrying
`<script>` and `onerror=` payloads shows as text; a token-guarded server's page asks for the
token, and its history page sends the token too. Without a browser: the page's security headers
and the cold search's imports. The history page with two KBs: test_web_report.py."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import blank, browser, keep  # noqa: F401  (browser: a fixture)
from tests.serve_helpers import Server, groove, loaded_modules, make_kb, serving
from tests.waiting import HANG_GUARD_S

XSS_TITLE = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
XSS_HEADING = '<img src=y onerror="window.__xss = 3"> zebrafish payloads'
XSS_TEXT = ('The zebrafish note <script>window.__xss = 4</script> and '
            '<img src=z onerror="window.__xss = 5"> and <b onmouseover="x()">bold</b>.')
XSS_TAG = "<img src=t onerror=window.__xss=6>"
XSS_NOTE = (f"---\ntitle: '{XSS_TITLE}'\ntags: [xss, '{XSS_TAG}']\n---\n\n## {XSS_HEADING}\n\n"
            f"{XSS_TEXT}\n")
WAIT_MS = HANG_GUARD_S * 1000


@pytest.fixture(scope="module")
def web_kb(golden_index: tuple[Path, Path], real_models_dir: Path,
           tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The sample KB plus one hostile note, indexed."""
    kb, env = make_kb(golden_index, tmp_path_factory.mktemp("web"), real_models_dir)
    (kb / "xss.md").write_text(XSS_NOTE, encoding="utf-8")
    # --db: the index stays where serve_helpers looks for its state file
    done = groove(env, "--db", str(kb / ".groove.db"), "index", "--kb-path", str(kb), "--quiet")
    assert done.returncode == 0, done.stderr
    return kb, env


@pytest.fixture(scope="module")
def web_server(web_kb: tuple[Path, dict[str, str]]) -> Iterator[Server]:
    kb, env = web_kb
    with serving(kb, env) as running:
        yield running


@pytest.fixture
def page(browser: Any, web_server: Server) -> Iterator[Any]:  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    opened.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    opened.goto(web_server.url + "/")
    opened.wait_for_selector("body[data-ready='1']")
    yield opened
    context.close()
    assert errors == []  # no script error, no refused resource, no CSP violation


def search(page: Any, query: str) -> list[str]:
    """Type `query` into the focused box, press Enter, and return the hits' paths."""
    before = int(page.evaluate("Number(document.body.dataset.searched || 0)"))
    page.keyboard.press("Control+A")
    page.keyboard.type(query)
    page.keyboard.press("Enter")
    # a selector, not wait_for_function: the page's policy refuses the string evaluation
    page.wait_for_selector(f"body[data-searched='{before + 1}']")
    return list(page.eval_on_selector_all("#results > li.hit",
                                          "items => items.map(i => i.dataset.path)"))


def test_the_status_band_shows_the_server(page: Any, web_kb: tuple[Path, dict[str, str]]
                                          ) -> None:
    kb, env = web_kb
    status = json.loads(groove(env, "status", "--kb-path", str(kb), "--format", "json",
                               "--no-server").stdout)
    band = {key: page.text_content(f"#s-{key}") for key in
            ("version", "kbs", "notes", "chunks", "pending", "model", "watcher", "uptime")}
    version = groove(env, "--version").stdout.split()[-1]
    assert band["version"] == version
    assert band["kbs"] == "kb"
    assert band["notes"] == str(status["documents"]) == "28"
    assert band["chunks"] == str(status["chunks"])
    assert band["pending"] == "0"
    assert band["model"] == "multilingual-e5-small"
    assert band["watcher"] == "off"
    assert re.fullmatch(r"\d+ (s|min \d+ s|h \d+ min)", band["uptime"] or "")
    # keyboard-first: the search box has the focus on load
    assert page.evaluate("document.activeElement.id") == "q"


def test_typing_a_query_shows_the_command_lines_top_5_and_opens_a_hit(
        page: Any, web_kb: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    kb, env = web_kb
    shown = search(page, "retry budget")
    cli = json.loads(groove(env, "search", "retry budget", "--kb-path", str(kb), "--format",
                            "json", "--no-server").stdout)
    assert shown[:5] == [hit["path"] for hit in cli["results"][:5]]
    assert len(shown) == 5
    first = cli["results"][0]
    hit = page.locator("#results > li.hit").first
    assert hit.locator("h2").text_content() == first["title"]
    assert hit.locator(".loc").text_content() == f"{first['path']}:{first['line_start']}"
    assert hit.locator(".heading").text_content() == f"§ {first['heading']}"
    assert hit.locator(".relevance").text_content() == f"relevance {first['relevance']:.2f}"
    # the editor link: vscode://file/ + the absolute path without its leading /
    href = hit.locator("a.loc").get_attribute("href")
    assert href == f"vscode://file/{first['abs_path'].lstrip('/')}:{first['line_start']}"
    # the matches are highlighted from the hit's spans
    marks = hit.locator(".snippet mark").all_text_contents()
    spans = first["match_spans"]
    assert marks and marks[0] == first["content"][spans[0]["start"]:spans[0]["end"]]
    # arrows move, Enter opens the hit in place (`get` of the note, its lines marked)
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.path") == first["path"]
    page.keyboard.press("Enter")
    note = hit.locator("pre.note")
    note.wait_for()
    whole = (kb / first["path"]).read_text(encoding="utf-8")
    assert [line.rstrip("\n") for line in note.locator(".line").all_text_contents()] == [
        f"{n}{text or ' '}" for n, text in enumerate(whole.splitlines(), start=1)]
    marked = note.locator(".hit-line .n").all_text_contents()
    assert marked == [str(n) for n in range(first["line_start"], first["line_end"] + 1)]
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.path") == shown[1]
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert page.evaluate("document.activeElement.id") == "q"
    hit.locator("button.open").click()  # closed again: the pictures show the list
    assert note.count() == 0
    # pictures at desktop and phone widths: test artifacts (and the README's, on request)
    desktop = tmp_path / "web-view-1280.png"
    page.screenshot(path=str(desktop))
    page.set_viewport_size({"width": 390, "height": 844})
    phone = tmp_path / "web-view-390.png"
    page.screenshot(path=str(phone))
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scroll
    shown = str(page.text_content("body") or "")
    for png, name in ((desktop, "web-view-desktop.png"), (phone, "web-view-phone.png")):
        assert not blank(png)
        keep(png, name, shown=shown)


def test_light_and_dark_follow_the_system(page: Any) -> None:
    background = "getComputedStyle(document.body).backgroundColor"
    page.emulate_media(color_scheme="light")
    assert page.evaluate(background) == "rgb(251, 251, 250)"
    page.emulate_media(color_scheme="dark")
    assert page.evaluate(background) == "rgb(23, 24, 27)"


def test_filters_reach_the_search(page: Any, web_kb: tuple[Path, dict[str, str]]) -> None:
    kb, env = web_kb
    page.click("#filters summary")
    page.fill("#path_glob", "team/**")
    page.select_option("#mode", "fts")
    page.focus("#q")
    shown = search(page, "retry budget")
    cli = json.loads(groove(env, "search", "retry budget", "--kb-path", str(kb), "--format",
                            "json", "--no-server", "--mode", "fts", "--path-glob",
                            "team/**").stdout)
    assert shown == [hit["path"] for hit in cli["results"]]
    assert shown and all(path.startswith("team/") for path in shown)
    page.fill("#date_from", "2030-01-01")
    page.focus("#q")
    assert search(page, "retry budget") == []
    assert "no results" in (page.text_content("#messages") or "")


def test_a_hostile_note_renders_as_text(page: Any) -> None:
    assert search(page, "zebrafish payloads")[0] == "xss.md"
    hit = page.locator("#results > li.hit").first
    assert hit.locator("h2").text_content() == XSS_TITLE
    assert hit.locator(".heading").text_content() == f"§ {XSS_HEADING}"
    assert "<script>window.__xss = 4</script>" in (hit.locator(".snippet").text_content() or "")
    assert hit.locator(".tags").text_content() == f"tags: xss, {XSS_TAG}"
    hit.locator("button.open").click()
    hit.locator("pre.note").wait_for()
    assert XSS_TEXT in (hit.locator("pre.note").text_content() or "").replace("\n", "")
    # nothing of it became markup, and no payload ran
    assert page.locator("#results img, #results script, #results b").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"


def test_the_page_is_served_with_a_strict_policy(web_server: Server) -> None:
    code, body, headers = web_server.get("/")
    assert code == 200
    policy = headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy
    assert headers["X-Content-Type-Options"] == "nosniff"
    html = body.decode()
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/web/app.js" defer>']
    assert " on" not in re.sub(r"\s+", " ", html).replace(" one", "")  # no inline handler
    script = web_server.get("/web/app.js")[1].decode()
    assert "innerHTML" not in script and "eval(" not in script
    port = web_server.url.rsplit(":", 1)[1]
    assert web_server.get("/", headers={"Host": f"evil.example:{port}"})[0] == 421
    assert web_server.get("/info", headers={"Origin": "http://evil.example"})[0] == 403
    code, body, _ = web_server.get("/info")
    assert code == 200 and json.loads(body)["editor_url"] == "vscode://file/{path}:{line}"


def test_a_token_guarded_page_asks_for_the_token(
        browser: Any, golden_index: tuple[Path, Path], real_models_dir: Path,  # noqa: F811
        tmp_path: Path) -> None:
    kb, env = make_kb(golden_index, tmp_path, real_models_dir)
    with serving(kb, env, "--token", "s3cret-token") as guarded:
        assert guarded.get("/")[0] == 200  # the page holds no data
        assert guarded.get("/info")[0] == 401 and guarded.get("/status")[0] == 401
        assert guarded.get("/report")[0] == 200 and guarded.get("/report/plots")[0] == 401
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(guarded.url + "/")
        page.wait_for_selector("#token-form:not([hidden])")
        page.fill("#token", "s3cret-token")
        page.keyboard.press("Enter")
        page.wait_for_selector("body[data-ready='1']")
        assert page.text_content("#s-notes") == "27"
        page.focus("#q")
        assert search(page, "retry budget")[0] == "reliability/retry-budgets.md"
        # the history page of the same tab sends the kept token too (this KB has no runs)
        page.goto(guarded.url + "/report")
        page.wait_for_selector("body[data-shown='kb']")
        assert page.locator("#no-history").count() == 1
        context.close()


def test_the_page_adds_nothing_to_a_cold_search(web_kb: tuple[Path, dict[str, str]],
                                                tmp_path: Path) -> None:
    kb, env = web_kb
    proc, modules = loaded_modules(env, tmp_path / "mods.json", "search", "retry",
                                   "--kb-path", str(kb), "--mode", "fts", "--no-server")
    assert proc.returncode == 0, proc.stderr
    assert [m for m in modules if m.startswith(("groove_cli.serve", "matplotlib",
                                                "playwright", "groove_cli.render.pictures",
                                                "groove_cli.pictures", "starlette"))] == []
