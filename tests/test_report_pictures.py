"""`groove eval --report` and `groove tune --report` (eval.md §13, tune.md §11, issue 42): on the
sample KB after five eval runs with two settings changes, the HTML report shows the history
plot with both changes marked and the per-query plot; tune's shows the sweep with the chosen
point. Both are rendered by headless Chromium to PNG and checked for their plots; the PNG
reports are real, non-blank images; bad `--report` input is one line; an eval without
`--report` never loads matplotlib."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import blank, browser, keep  # noqa: F401  (browser: a fixture)
from tests.serve_helpers import groove, loaded_modules, make_kb
from tests.waiting import HANG_GUARD_S

RUNS: tuple[tuple[str, ...], ...] = (
    (), (), ("--fusion", "rrf"), ("--fusion", "rrf"), ("--fusion", "rrf", "--rrf-k", "20"))
"""Five eval runs: the defaults twice (the first saves a baseline), then RRF (change 1) twice,
then another rrf_k (change 2), compared with the baseline."""


@pytest.fixture(scope="module")
def reports(golden_index: tuple[Path, Path], real_models_dir: Path,
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The KB after the five runs, and the reports the last run and a tune wrote."""
    root = tmp_path_factory.mktemp("pictures")
    kb, env = make_kb(golden_index, root, real_models_dir)
    out = root / "out"
    out.mkdir()
    base = str(out / "baseline.json")
    for n, flags in enumerate(RUNS, start=1):
        extra = (["--save-baseline", base] if n == 1 else
                 ["--baseline", base, "--report", "html", str(out / "eval.html")]
                 if n == len(RUNS) else [])
        done = groove(env, "eval", "--kb-path", str(kb), *flags, *extra)
        assert done.returncode == 0, done.stderr
    last = groove(env, "eval", "--kb-path", str(kb), *RUNS[-1], "--no-history",
                  "--report", "png", str(out / "eval.png"))
    assert last.returncode == 0, last.stderr
    for space, kind in (("fusion", "html"), ("fusion", "png"), ("fusion-method", "html")):
        tuned = groove(env, "tune", "--kb-path", str(kb), "--space", space, "--report", kind,
                       str(out / f"tune-{space}.{kind}"))
        assert tuned.returncode == 0, tuned.stderr
    return {"kb": kb, "env": env, "out": out}


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:  # noqa: F811
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(HANG_GUARD_S * 1000)
    errors: list[str] = []
    opened.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    yield opened
    context.close()
    assert errors == []  # the page loads nothing and runs nothing


def rendered(page: Any, report: Path, picture: Path) -> str:
    """Photograph the report; the text it shows."""
    page.goto(report.as_uri())
    page.screenshot(path=str(picture), full_page=True)
    assert not blank(picture)
    return str(page.text_content("body") or "")


def test_the_eval_report_marks_both_settings_changes(page: Any, reports: dict[str, Any],
                                                      tmp_path: Path) -> None:
    html = reports["out"] / "eval.html"
    text = html.read_text(encoding="utf-8")
    # self-contained: no script, nothing fetched (every reference is inside the page)
    assert "<script" not in text and "<metadata>" not in text
    assert re.findall(r'(?:src|href)="(?!#)[^"]*"', text) == []
    png = tmp_path / "eval-report.png"
    shown = rendered(page, html, png)
    assert page.locator("svg#plot-history").count() == 1
    # one dashed line per settings change, numbered, and nothing else marked
    assert page.locator("#settings-change-1").count() == 1
    assert page.locator("#settings-change-2").count() == 1
    assert page.locator("#settings-change-3, #corpus-change-1").count() == 0
    notes = page.locator("#section-plot-history ol.notes li").all_text_contents()
    assert len(notes) == 2
    # under RRF the score fusion's keys leave the fingerprint: they are listed after the method
    assert notes[0].startswith("S1, before run 3: fusion.method: score → rrf; ")
    assert notes[1] == "S2, before run 5: fusion.rrf_k: 60.0 → 20.0"
    # the per-query plot compares the last run with the baseline the first one saved
    assert page.locator("svg#plot-query-deltas").count() == 1
    caption = page.locator("#section-plot-query-deltas figcaption").text_content() or ""
    assert re.fullmatch(r"[1-9]\d* queries changed against the baseline: \d+ worse \(red\), "
                        r"\d+ better \(green\)\.", caption), caption
    keep(png, "eval-report.png", shown=shown)


def test_the_tune_report_shows_the_sweep_and_the_chosen_point(
        page: Any, reports: dict[str, Any], tmp_path: Path) -> None:
    png = tmp_path / "tune-report.png"
    shown = rendered(page, reports["out"] / "tune-fusion.html", png)
    assert page.locator("svg#plot-sweep #sweep-surface").count() == 1
    assert page.locator("svg#plot-sweep #tune-chosen").count() == 1
    assert page.locator("svg#plot-sweep #tune-current").count() == 1
    assert page.locator("svg#plot-sweep-line #sweep-ci-band").count() == 1
    assert page.locator("svg#plot-held-out").count() == 1
    meta = " ".join(page.locator("p.meta").all_text_contents())
    assert "space fusion" in meta and "chosen: h=" in meta
    keep(png, "tune-report.png", shown=shown)


def test_the_fusion_method_report_marks_the_candidates(page: Any, reports: dict[str, Any],
                                                      tmp_path: Path) -> None:
    rendered(page, reports["out"] / "tune-fusion-method.html", tmp_path / "tune-method.png")
    assert page.locator("svg#plot-sweep #sweep-surface").count() == 1
    assert page.locator("svg#plot-sweep #tune-chosen").count() == 1
    assert page.locator("svg#plot-sweep #tune-current").count() == 1
    ticks = page.locator("svg#plot-sweep text").all_text_contents()
    assert "RRF" in ticks and "α=0.5" in ticks


def test_reports_name_the_golden_file_without_its_path(reports: dict[str, Any]) -> None:
    """Reports are shared (CI artifacts, the README): the golden file is named by its folder
    and its own name, never by a path of the machine that ran the eval."""
    kb = reports["kb"]
    for name in ("eval.html", "tune-fusion.html", "tune-fusion-method.html"):
        text = (reports["out"] / name).read_text(encoding="utf-8")
        assert "golden kb/.groove-eval.yml" in text, name
        assert str(kb.parent) not in text, name


def test_the_png_reports_are_pictures(reports: dict[str, Any]) -> None:
    from PIL import Image

    for name, height in (("eval.png", 2.0), ("tune-fusion.png", 8.0)):
        path = reports["out"] / name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert not blank(path)
        with Image.open(path) as image:
            assert image.width == 900 and image.height >= height * 100


def test_bad_report_requests_are_one_line(reports: dict[str, Any]) -> None:
    kb, env, out = reports["kb"], reports["env"], reports["out"]
    cases = [
        (("eval", "--report", "pdf", str(out / "x.pdf")),
         "groove: error: --report 'pdf': use --report html FILE or --report png FILE\n"),
        (("tune", "--space", "calibration", "--report", "html", str(out / "x.html")),
         "groove: error: --report draws the grid sweeps; --space calibration has none\n"
         "groove: hint: use --space fusion, retrieval, fusion-method, feedback or per-note "
         "with --report\n"),
        (("eval", "--report", "html", str(out / "missing" / "x.html")),
         f"groove: error: --report {out / 'missing' / 'x.html'}: the folder "
         f"{out / 'missing'} does not exist\n"
         "groove: hint: create the folder first, or name a file in an existing one\n"),
    ]
    for args, stderr in cases:
        done = groove(env, *args, "--kb-path", str(kb))
        assert (done.returncode, done.stderr) == (2, stderr)
    assert not (out / "x.pdf").exists() and not (out / "x.html").exists()


def test_an_eval_without_report_loads_no_plotting(reports: dict[str, Any],
                                                  tmp_path: Path) -> None:
    proc, modules = loaded_modules(reports["env"], tmp_path / "mods.json", "eval", "--kb-path",
                                   str(reports["kb"]), "--no-history")
    assert proc.returncode == 0, proc.stderr
    assert [m for m in modules if m.startswith(("matplotlib", "PIL", "groove_cli.render.pic",
                                                "groove_cli.render.eval_pic",
                                                "groove_cli.pictures"))] == []
