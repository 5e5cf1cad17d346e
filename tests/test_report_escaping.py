"""Reports carry what their format can (issue 29 item 7): JUnit XML is always well-formed,
Markdown never lets a backtick end a code span or raw HTML into a step summary, and a TREC run
file never carries a control character."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from markdown_it import MarkdownIt

from groove_cli.evaluate.trec import decode_docno, encode_qid, run_lines
from groove_cli.render.compare import render_compare_markdown
from groove_cli.render.junit import render_junit
from groove_cli.render.markdown import code, eval_markdown
from tests.test_eval_baseline import make_run

HOSTILE_ID = "q`<img src=x onerror=alert(1)>``\x1b[31m\x07\x00"
HOSTILE_PATH = "dir/a\x00b\x1b.md"
HTML = MarkdownIt("commonmark", {"html": True}).enable("table")


def hostile_run() -> dict[str, Any]:
    run = make_run([0.0, 1.0])
    miss = run["per_query"][0]
    miss["id"] = HOSTILE_ID
    miss["query"] = "find \x00 this \x1b and \ufffe"
    miss["expected"] = [{"path": HOSTILE_PATH, "heading": "H\x07"}]
    miss["top_k"] = [{"rank": 1, "path": HOSTILE_PATH, "heading": "H\x0b", "score": 0.5}]
    return run


def test_junit_with_control_characters_is_well_formed() -> None:
    xml = render_junit(hostile_run(), suite_name="groove eval: g\x1b.yml")
    root = ET.fromstring(xml)  # raises on a document that is not well-formed
    names = [case.get("name") for case in root.iter("testcase")]
    assert names[0] == "q`<img src=x onerror=alert(1)>``\\x1b[31m\\x07\\x00"
    failure = root.find(".//failure")
    assert failure is not None and failure.text is not None
    assert "find \\x00 this \\x1b and \\ufffe" in failure.text
    assert "dir/a\\x00b\\x1b.md#H\\x0b" in failure.text
    assert "\x1b" not in xml and "\x00" not in xml and "\x07" not in xml


def _no_raw_html(markdown: str) -> str:
    html = HTML.render(markdown)
    assert "<img" not in html, html
    return html


def test_markdown_backticks_and_html_stay_inert() -> None:
    report = hostile_run()
    report.update(previous=None, diff=None, regressions=None)
    markdown = eval_markdown(report, golden="<b>gold</b>.yml")
    html = _no_raw_html(markdown)
    assert "<code>q`&lt;img src=x onerror=alert(1)&gt;``\\x1b[31m\\x07\\x00</code>" in html
    assert "&lt;b&gt;gold&lt;/b&gt;.yml" in html
    assert "\x1b" not in markdown and "\x07" not in markdown and "\x00" not in markdown


def test_code_span_fence_outlasts_any_backtick_run() -> None:
    for text in ("a", "`", "a``b", "```", " x ", "`a`"):
        rendered = HTML.render(code(text)).strip()
        assert rendered.startswith("<p><code>") and rendered.endswith("</code></p>")
        inner = rendered[len("<p><code>"):-len("</code></p>")]
        assert inner.replace("&lt;", "<") == text.strip() or inner == text


def test_compare_markdown_labels_are_inert() -> None:
    report = {"a": {"label": "<img src=x onerror=alert(1)>.json"}, "b": {"label": "run `1`"},
              "metrics": [], "settings_diff": [], "corpus_change": None, "pairs": 3}
    _no_raw_html(render_compare_markdown(report))


def test_trec_run_lines_carry_no_control_characters() -> None:
    lines = run_lines(hostile_run())
    text = "\n".join(lines)
    assert not any(ord(c) < 32 or 0x7f <= ord(c) <= 0x9f for c in text.replace("\n", ""))
    first = lines[0].split(" ")
    assert len(first) == 6 and first[0] == encode_qid(HOSTILE_ID)
    assert decode_docno(first[2]) == (HOSTILE_PATH, "H\x0b")  # reversible
