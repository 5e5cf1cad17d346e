"""Shared by the browser tests: the distribution's headless Chromium driven by Playwright.

Playwright for Python (pinned in constraints.txt, in the dev extra) talks to the browser over
its own protocol driver, which ships inside the wheel; it is given the system's `chromium`
(`executable_path`), so nothing is downloaded (`.ci/run` installs Debian's `chromium` when it is
missing). A test skips, saying why, only when no Chromium binary exists. Why Playwright rather
than Selenium: it needs no separate chromedriver matched to the browser's version, its sync API
waits on page state (a selector, a data attribute) instead of sleeping, and it is maintained by
Microsoft with monthly releases.

Screenshots and rendered reports are test artifacts: they go to `$GROOVE_TEST_ARTIFACTS`
(default `.cache/test-artifacts/` in the checkout, git-ignored). With `GROOVE_UPDATE_IMAGES=1`
the tests also refresh the pictures the README shows (docs/images/); a README picture whose
page shows a path of this machine (a temp or home folder) fails its test instead.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.waiting import HANG_GUARD_S

REPO = Path(__file__).resolve().parent.parent
IMAGES = REPO / "docs" / "images"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str | None:
    """The Chromium binary on PATH (GROOVE_CHROMIUM names another), or None."""
    given = os.environ.get("GROOVE_CHROMIUM")
    if given:
        return given
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def artifacts() -> Path:
    folder = Path(os.environ.get("GROOVE_TEST_ARTIFACTS", REPO / ".cache" / "test-artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def machine_paths() -> list[str]:
    """Paths of this machine a picture must never show: the temp folder (pytest's folders are
    below it) and the home folder."""
    return [p for p in {tempfile.gettempdir(), str(Path.home())} if p not in ("", "/")]


def keep(png: Path, readme_name: str | None = None, *, shown: str | None = None) -> None:
    """Copy a picture into the artifacts (and, with GROOVE_UPDATE_IMAGES=1, docs/images/). A
    README picture comes with `shown`, the text on the page it photographs, which must name no
    path of this machine (machine_paths): the README is read everywhere."""
    if readme_name is not None:
        assert shown, f"{readme_name}: pass the text the picture shows"
        leaks = [path for path in machine_paths() if path in shown]
        assert leaks == [], f"{readme_name} would show {leaks}"
    shutil.copy2(png, artifacts() / png.name)
    if readme_name and os.environ.get("GROOVE_UPDATE_IMAGES") == "1":
        shutil.copy2(png, IMAGES / readme_name)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium for the module's tests."""
    binary = chromium_path()
    if binary is None:
        pytest.skip("no Chromium binary on PATH (apt-get install chromium; .ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=binary, headless=True,
                                          args=["--no-sandbox", "--disable-gpu"],
                                          timeout=HANG_GUARD_S * 1000)
        try:
            yield launched
        finally:
            launched.close()


def blank(png: Path) -> bool:
    """Whether a screenshot is one flat colour (nothing rendered)."""
    from PIL import Image

    with Image.open(png) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    return colours is not None and len(colours) <= 2
