"""The offline website (website/build.py): built from stored outputs, checked in Chromium.

Builds the site into a temporary folder (Sphinx + MyST-NB, the widget manager and MathJax
vendored from npm by ``npm ci``), serves it on 127.0.0.1 and checks what a reader sees:
prose, code outputs, images, a rendered widget, math, and headings with their inline code,
in the page and in the navigation; and that learner pages carry no solution markers, test
tags, answers or CDN scripts. Screenshots: ``artifacts/website/``. Without Sphinx/MyST-NB,
the npm packages, Chromium or Playwright it is skipped with the reason, except under CI
(``CI`` set), where it fails: .ci/run installs all of them.

Accessibility: axe-core (npm, ``node_modules/axe-core``) runs in Chromium on the index and every
lesson and solution page, after the widgets have rendered, and must find no critical or serious
violation; widgets with controls carry a note that they need a running kernel.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
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


@pytest.mark.slow
def test_every_lesson_has_a_learner_and_a_solution_page(site):
    from course_utils import build

    stems = build.solution_stems()
    assert set(_pages(site, "lessons")) == set(stems) == set(_pages(site, "solutions"))


@pytest.mark.slow
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


@contextlib.contextmanager
def _served(site: Path) -> Iterator[str]:
    """The site served on 127.0.0.1; yields its base URL."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@pytest.mark.slow
def test_pages_render_in_a_browser(site):
    _need(_missing_browser())
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with _served(site) as base:
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
                widget.first.scroll_into_view_if_needed()
                pg.screenshot(path=str(ARTIFACTS / "lesson_00.png"), full_page=False)

                pg.goto(f"{base}/lessons/01_tensors.html")
                # math, by the vendored MathJax (lesson 00 has none since its first exercise asks
                # the learner to find a colleague's bug instead of typing a formula)
                pg.locator("mjx-container").first.wait_for(state="attached")
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


def _module(name: str):
    """A module of website/ (not a package), imported from its file."""
    spec = importlib.util.spec_from_file_location(f"website_{name}", ROOT / "website" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fix_html_gives_headings_a_level_and_code_blocks_a_keyboard_stop():
    a11y = _module("course_a11y")
    html = ('<p class="caption" role="heading"><span class="caption-text">Lessons</span></p>'
            '<div class="highlight-python notranslate"><div class="highlight"><pre><span></span>x = 1</pre></div></div>'
            '<div class="output stream highlight-myst-ansi notranslate"><div class="highlight"><pre>1</pre></div></div>'
            '<div class="output traceback highlight-ipythontb notranslate"><div class="highlight"><pre>Error</pre>'
            '<div class="table-wrapper colwidths-auto docutils container"><table></table></div>')
    fixed = a11y.fix_html(html)
    assert '<p class="caption" role="heading" aria-level="2">' in fixed
    assert fixed.count('tabindex="0"') == 4
    for label in ("Code", "Output", "Error traceback", "Table"):
        assert f'role="group" aria-label="{label}">' in fixed
    assert a11y.fix_html(fixed) == fixed, "fixing twice changes nothing"


def _widget_cell(view: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("w")
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "text/plain": "VBox()", "application/vnd.jupyter.widget-view+json": {"model_id": view}})]
    return cell


def test_widgets_with_a_control_get_a_kernel_note():
    website = _module("build")
    state = {
        "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_slider", "IPY_MODEL_out"]}},
        "slider": {"model_name": "FloatLogSliderModel", "state": {"style": "IPY_MODEL_style"}},
        "style": {"model_name": "SliderStyleModel", "state": {}},
        "out": {"model_name": "OutputModel", "state": {}},
        "bar": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_progress", "IPY_MODEL_style"]}},
        "progress": {"model_name": "FloatProgressModel", "state": {}},
    }
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {website.WIDGET_STATE: {"state": state}}
    nb.cells = [_widget_cell("box"), _widget_cell("bar"), nbformat.v4.new_code_cell("1")]
    assert website.needs_kernel(nb.cells[0], state) and not website.needs_kernel(nb.cells[1], state)
    cells = website.with_kernel_notes(nb, "notebooks/03_nn_module.ipynb").cells
    assert [c.cell_type for c in cells] == ["code", "markdown", "code", "code"], "a note under the slider only"
    note = cells[1].source
    assert "kernel-note" in note and "needs a running Python kernel" in note
    assert "labpath=notebooks%2F03_nn_module.ipynb" in note and "blob/main/notebooks/03_nn_module.ipynb" in note


@pytest.mark.slow
def test_widget_pages_say_the_widget_needs_a_kernel(site):
    notes = {f"{folder}/{stem}": html.count('kernel-note') for folder in ("lessons", "solutions")
             for stem, html in _pages(site, folder).items()}
    for page in ("lessons/03_nn_module", "solutions/03_nn_module", "lessons/02_autograd", "lessons/00_start_here"):
        assert notes[page] == 1, page
    assert notes["lessons/05_training_loop"] == 1, "the learning-rate slider, not the progress bar"
    assert notes["lessons/06_losses_optimizers"] == 0
    lesson = _pages(site, "lessons")["03_nn_module"]
    note = lesson[lesson.index("kernel-note"):][:1500]
    assert "needs a running Python kernel" in note and "notebooks%2F03_nn_module.ipynb" in note
    assert lesson.index("application/vnd.jupyter.widget-view+json") < lesson.index("kernel-note"), "under the widget"


# Every widget view replaced by what the manager draws, and the images it draws loaded.
WIDGETS_DRAWN = """() => {
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length;
  const areas = Array.from(document.querySelectorAll('.widget-subarea'));
  return areas.length >= views && areas.every(a => a.childElementCount > 0)
    && Array.from(document.querySelectorAll('.widget-subarea img')).every(i => i.complete);
}"""
AXE_RUN = """async () => (await axe.run(document, {resultTypes: ['violations']})).violations.map(
  v => ({id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map(n => n.target.join(' '))}))"""


@pytest.mark.slow
def test_axe_finds_no_critical_or_serious_violation(site):
    """axe-core on the index and every page at a desktop width, and on the index and the lessons
    at a phone width (what scrolls depends on it), once the widgets are drawn; a failure names
    each violation's page, rule, impact and elements."""
    _need(_missing_browser())
    if not AXE.is_file():
        _need("node_modules/axe-core is missing: run `npm ci` (axe-core checks the pages' accessibility)")
    from playwright.sync_api import sync_playwright

    lessons = [f"lessons/{p.name}" for p in sorted((site / "lessons").glob("*.html"))]
    pages = ["index.html", *lessons, *(f"solutions/{p.name}" for p in sorted((site / "solutions").glob("*.html")))]
    axe = AXE.read_text(encoding="utf-8")
    found: list[str] = []
    counts: dict[str, int] = {}
    with _served(site) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            # every page on a desktop; the index and the lessons on a phone too (the solution
            # pages come from the same generator and templates)
            for width, height, at in ((1300, 1000, pages), (390, 844, pages[:1 + len(lessons)])):
                pg = browser.new_page(viewport={"width": width, "height": height})
                pg.set_default_timeout(180_000)  # axe takes seconds a page, more on a busy machine
                for page in at:
                    pg.goto(f"{base}/{page}", wait_until="load")
                    pg.wait_for_function(WIDGETS_DRAWN)
                    pg.wait_for_timeout(200)  # course.js names what the widgets drew (debounced 50 ms)
                    pg.add_script_tag(content=axe)
                    for v in pg.evaluate(AXE_RUN):
                        counts[v["impact"]] = counts.get(v["impact"], 0) + len(v["targets"])
                        if v["impact"] in ("critical", "serious"):
                            found.append(f"{page} at {width}px: {v['id']} ({v['impact']}: {v['help']}) "
                                         f"on {len(v['targets'])}: {v['targets'][:5]}")
                if width == 390:
                    pg.goto(f"{base}/lessons/03_nn_module.html", wait_until="load")
                    pg.wait_for_function(WIDGETS_DRAWN)
                    pg.wait_for_timeout(200)
                    handle = pg.locator('.cell_output [role="slider"]').first
                    note = pg.locator(f"#{handle.get_attribute('aria-describedby')}")
                    assert "needs a running Python kernel" in note.inner_text(), "the slider is described by the note"
                    label = "h => document.getElementById(h.getAttribute('aria-labelledby')).textContent"
                    assert handle.evaluate(label) == "gain", "the slider is named by its description"
                    note.scroll_into_view_if_needed()
                    ARTIFACTS.mkdir(parents=True, exist_ok=True)
                    pg.screenshot(path=str(ARTIFACTS / "lesson_03_kernel_note_phone.png"))
                pg.close()
        finally:
            browser.close()
    print(f"axe-core on {len(pages)} pages (and {1 + len(lessons)} on a phone), elements by impact: {counts}")
    assert not found, "axe-core found critical or serious violations:\n" + "\n".join(found)
