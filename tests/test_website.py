"""The offline website (website/build.py): built from stored outputs, checked in Chromium.

Builds the site into a temporary folder (Sphinx + MyST-NB, the widget manager and MathJax
vendored from npm by ``npm ci``), serves it on 127.0.0.1 and checks what a reader sees:
prose, code outputs, images, a rendered widget, math, and headings with their inline code,
in the page and in the navigation; and that learner pages carry no solution markers, test
tags, answers or CDN scripts. Screenshots: ``artifacts/website/``. Without Sphinx/MyST-NB,
the npm packages, Chromium or Playwright it is skipped with the reason, except under CI
(``CI`` set), where it fails: .ci/run installs all of them.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts" / "website"
CHROMIUM = os.environ.get("COURSE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--disable-background-networking"]


def _missing_build() -> str | None:
    for module in ("sphinx", "myst_nb", "furo"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (requirements-dev.txt)"
    if not (ROOT / "node_modules" / "@jupyter-widgets" / "html-manager").is_dir():
        return "node_modules/ is missing: run `npm ci` (the widget manager and MathJax to bundle)"
    return None


def _missing_browser() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"Chromium not found at {CHROMIUM} (`apt-get install chromium`)"
    if importlib.util.find_spec("playwright") is None:
        return "Playwright's Python package is not installed"
    return None


def _need(reason: str | None) -> None:
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI must build and test the website: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    _need(_missing_build())
    out = tmp_path_factory.mktemp("website")
    proc = subprocess.run([sys.executable, str(ROOT / "website" / "build.py"), "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out / "html"


def _pages(site: Path, folder: str) -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted((site / folder).glob("*.html"))}


def test_every_lesson_has_a_learner_and_a_solution_page(site):
    from course_utils import build

    stems = build.solution_stems()
    assert set(_pages(site, "lessons")) == set(stems) == set(_pages(site, "solutions"))


def test_no_markers_test_tags_answers_or_cdn(site):
    for folder in ("lessons", "solutions"):
        for stem, html in _pages(site, folder).items():
            for bad in ("BEGIN SOLUTION", "END SOLUTION", "NBVAL_", "raises-exception", "nbval-ignore-output",
                        "course-setup", "COURSE_PIP_SOURCE"):
                assert bad not in html, f"{folder}/{stem}: {bad!r}"
            external = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', html)
            assert not external, f"{folder}/{stem} loads {external}"
    lesson, solution = _pages(site, "lessons")["00_start_here"], _pages(site, "solutions")["00_start_here"]
    assert "Replace this line with your code" in lesson and "Replace this line with your code" not in solution
    assert "Correct" not in re.sub(r"<[^>]+>", "", lesson).split("Warm-up exercise")[-1].split("Try it yourself")[0], \
        "a learner page must not show a check passing before the learner answered"
    assert "colab.research.google.com/github/" in lesson, "the Colab link stays"


def test_pages_render_in_a_browser(site):
    _need(_missing_browser())
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                pg = browser.new_page(viewport={"width": 1300, "height": 1000})
                pg.set_default_timeout(30_000)
                errors: list[str] = []
                requests: list[str] = []
                pg.on("pageerror", lambda exc: errors.append(str(exc)))
                pg.on("request", lambda r: requests.append(r.url))

                pg.goto(f"{base}/lessons/00_start_here.html")
                pg.get_by_text("Warm-up exercise").first.wait_for()  # prose
                pg.locator(".cell_output").first.wait_for()  # outputs
                # the widget: the manager bundle replaced the view script with live controls
                widget = pg.locator(".cell_output .jupyter-widgets, .cell_output .widget-html, .cell_output .lm-Widget")
                widget.first.wait_for(state="attached")
                assert widget.count() > 0
                pg.locator("mjx-container").first.wait_for(state="attached")  # math, by the vendored MathJax
                widget.first.scroll_into_view_if_needed()
                pg.screenshot(path=str(ARTIFACTS / "lesson_00.png"), full_page=False)

                pg.goto(f"{base}/lessons/01_tensors.html")
                img = pg.locator(".cell_output img").first
                img.scroll_into_view_if_needed()
                pg.wait_for_function("(img) => img.complete && img.naturalWidth > 0", arg=img.element_handle())
                pg.locator(".cell_output .jupyter-widgets, .cell_output .lm-Widget").first.wait_for(state="attached")
                img.screenshot(path=str(ARTIFACTS / "lesson_01_image.png"))

                pg.goto(f"{base}/lessons/03_nn_module.html")
                h1 = pg.locator("h1").first
                assert h1.locator("code").first.inner_text() == "nn.Module"
                nav = pg.locator(".sidebar-tree a", has_text="nn.Module").first
                assert nav.locator("code").count() >= 1, "inline code in the navigation"
                pg.screenshot(path=str(ARTIFACTS / "lesson_03_heading.png"))

                pg.goto(f"{base}/solutions/05_training_loop.html")
                pg.locator(".cell_output img").first.wait_for()
                pg.locator("text=(solutions)").first.wait_for()
                assert not errors, errors
                outside = [u for u in requests if not u.startswith(base) and not u.startswith("data:")]
                assert not outside, f"the site fetched from outside: {outside[:5]}"
            finally:
                browser.close()
    finally:
        server.shutdown()
