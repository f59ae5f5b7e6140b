"""A real browser test: JupyterLab in headless Chromium, as a learner would use the course.

Starts ``jupyter lab`` on 127.0.0.1 with a random token and throwaway config/settings
(``autoStartDefaultKernel`` on, news off, ``.py`` files open as notebooks, as on Binder),
drives Debian's Chromium (``/usr/bin/chromium``) with Playwright's Python package (no browser
download), and checks what a person would see:

- lesson 00 (the learner version, plus a cell opening the progress dashboard) runs with
  *Run All*: the check feedback is rendered, there is no error output except in cells tagged
  ``raises-exception``;
- the dashboard widget renders and responds to a change of its filter;
- after the learner answers the exercise and runs its check, the dashboard shows it correct
  without its cell being run again;
- learner notebooks have no text pair: a notebook edited elsewhere (VS Code, Colab, a script),
  even with a stale ``.py`` from the old layout next to it, opens with the learner's work, and
  saving it writes no ``.py``;
- a solution whose ``.ipynb`` was edited elsewhere while its ``.py`` is older is refused with
  jupytext's message, not silently opened with the ``.py``'s cells.

Screenshots go to ``artifacts/browser/``. Without Chromium or Playwright the test is skipped
with the reason (``.ci/run`` installs Chromium when it can).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from course_utils import build

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM = os.environ.get("COURSE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
LESSON = "00_start_here"
DASHBOARD_CELL = "from course_utils.dashboard import dashboard\n\ndashboard()"
ANSWER = "def celsius_to_fahrenheit(celsius):\n    return celsius * 9 / 5 + 32\n"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--disable-background-networking",
    "--disable-extensions", "--disable-sync", "--disable-default-apps", "--no-first-run",
    "--disable-component-update", "--mute-audio", "--metrics-recording-only",
]


def _requirements() -> str | None:
    if not Path(CHROMIUM).exists():
        return (f"Chromium not found at {CHROMIUM}: install Debian's `chromium` package "
                "(`apt-get install chromium`; .ci/run does this when run as root)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright's Python package is not installed (`pip install playwright`; no browser download needed)"
    return None


_MISSING = _requirements()
if _MISSING:
    pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.skip(reason=_MISSING)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _settings(folder: Path) -> None:
    """User settings as JSON5 files, the way JupyterLab stores them."""
    values = {
        "@jupyterlab/notebook-extension/tracker": {"autoStartDefaultKernel": True},
        "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
        "@jupyterlab/docmanager-extension/plugin": {"defaultViewers": {"python": "Jupytext Notebook"}},
        "@jupyterlab/apputils-extension/announcements": {},
    }
    for plugin, value in values.items():
        path = folder / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))


def _course_copy(folder: Path) -> int:
    """Lesson 00's learner notebook with a dashboard cell at the end, and its solution pair in
    solutions/ (the course's jupytext.toml pairs only that folder); returns the cell count."""
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "jupytext.toml", folder / "jupytext.toml")
    (folder / "solutions").mkdir()
    for ext in (".ipynb", ".py"):
        shutil.copy(build.SOLUTIONS / f"{LESSON}{ext}", folder / "solutions")
    nb = nbformat.read(build.NOTEBOOKS / f"{LESSON}.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("Your progress dashboard:"))
    cell = nbformat.v4.new_code_cell(DASHBOARD_CELL)
    nb.cells.append(cell)
    for i, c in enumerate(nb.cells):
        c["id"] = f"cell-{i:03d}"
    (folder / f"{LESSON}.ipynb").write_text(nbformat.writes(nb) + "\n")
    return len(nb.cells)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    base = tmp_path_factory.mktemp("lab")
    work = base / "course"
    n_cells = _course_copy(work)
    settings = base / "settings"
    _settings(settings)
    (base / "config").mkdir()
    (base / "workspaces").mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    # its own progress log: the dashboard must show this session only, not other tests' checks
    env = dict(os.environ, COURSE_PROGRESS_LOG=str(base / "progress.jsonl"),
               JUPYTER_CONFIG_DIR=str(base / "config"), JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"), MPLBACKEND="module://matplotlib_inline.backend_inline")
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={token}", "--LabApp.expose_app_in_browser=True",
           f"--ServerApp.root_dir={work}", "--ServerApp.open_browser=False",
           "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(base / "server.log", "w")
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("JupyterLab did not start:\n" + (base / "server.log").read_text()[-3000:])
            time.sleep(0.5)
        yield {"url": url, "token": token, "work": work, "cells": n_cells, "log": base / "server.log"}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def page(lab):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            pg = context.new_page()
            pg.set_default_timeout(60_000)
            console_errors: list[str] = []
            pg.on("pageerror", lambda exc: console_errors.append(str(exc)))
            pg.goto(f"{lab['url']}/lab/tree/{LESSON}.ipynb?token={lab['token']}")
            _wait_for_kernel(pg, f"{LESSON}.ipynb")
            pg.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            _wait_until_executed(pg, lab["cells"])
            pg.console_errors = console_errors  # type: ignore[attr-defined]
            yield pg
        finally:
            browser.close()


JS_PANEL = """(path) => {
  const app = window.jupyterapp;
  if (!app) return null;
  for (const w of app.shell.widgets('main')) {
    if (w.context && w.context.path === path) return w;
  }
  return null;
}"""


def _js(body: str) -> str:
    return f"(path) => {{ const panel = ({JS_PANEL})(path); {body} }}"


def _wait_for_kernel(pg, path: str) -> None:
    pg.wait_for_function(_js("""
        if (!panel || !panel.context || !panel.context.isReady) return false;
        if (!panel.sessionContext || !panel.sessionContext.session) return false;
        const k = panel.sessionContext.session.kernel;
        return !!k && k.status === 'idle' && panel.content.model && panel.content.model.cells.length > 0;
    """), arg=path, timeout=120_000)


def _wait_until_executed(pg, n_cells: int, path: str = f"{LESSON}.ipynb") -> None:
    """Every code cell has an execution count and the kernel is idle (the model, not the DOM:
    JupyterLab renders off-screen cells lazily)."""
    pg.wait_for_function(_js("""
        const cells = panel.content.model.cells;
        for (let i = 0; i < cells.length; i++) {
          const c = cells.get(i);
          if (c.type === 'code' && c.sharedModel.getSource().trim() && c.executionCount === null) return false;
        }
        return panel.sessionContext.session.kernel.status === 'idle';
    """), arg=path, timeout=180_000)


def _notebook_json(pg, path: str = f"{LESSON}.ipynb") -> dict:
    return pg.evaluate(_js("return panel.content.model.toJSON();"), path)


def _cell_index(nb: dict, predicate) -> int:
    def text(c: dict) -> str:
        return "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
    return next(i for i, c in enumerate(nb["cells"]) if predicate(text(c)))


def _show_cell(pg, index: int, mark: str, path: str = f"{LESSON}.ipynb"):
    """Scroll cell ``index`` into view, tag its DOM node, and return a locator for it."""
    pg.evaluate(_js(f"""
        const nb = panel.content;
        nb.activeCellIndex = {index};
        return Promise.resolve(nb.scrollToItem ? nb.scrollToItem({index}, 'start') : null).then(() => {{
          nb.widgets[{index}].node.setAttribute('data-course-test', '{mark}');
          nb.widgets[{index}].node.scrollIntoView();
        }});
    """), path)
    loc = pg.locator(f"[data-course-test='{mark}']")
    loc.wait_for(state="visible")
    return loc


def _text(outputs: list[dict]) -> str:
    parts = []
    for o in outputs:
        parts.append(o.get("text", "") if isinstance(o.get("text"), str) else "".join(o.get("text", [])))
        for v in o.get("data", {}).values():
            parts.append(v if isinstance(v, str) else json.dumps(v))
    return "\n".join(parts)


def test_run_all_renders_the_check_feedback_and_no_errors(page, lab):
    nb = _notebook_json(page)
    assert len(nb["cells"]) == lab["cells"]
    errors, stderr = [], []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        for out in cell.get("outputs", []):
            if out["output_type"] == "error" and "raises-exception" not in tags:
                errors.append(f"cell {i}: {out.get('ename')}: {out.get('evalue')}")
            if out["output_type"] == "stream" and out.get("name") == "stderr":
                stderr.append(f"cell {i}: {_text([out])[:200]}")
    assert not errors, errors
    assert not stderr, stderr
    check = _cell_index(nb, lambda s: s.strip() == "ex.celsius_to_fahrenheit.check(celsius_to_fahrenheit)")
    assert "Not attempted yet" in _text(nb["cells"][check]["outputs"])
    # what the learner sees: the rendered HTML feedback, not just the model
    cell = _show_cell(page, check, "check")
    feedback = cell.locator(".jp-OutputArea-output")
    feedback.filter(has_text="Not attempted yet").wait_for(state="visible")
    assert "NotImplementedError" in feedback.inner_text()
    cell.screenshot(path=str(ARTIFACTS / "check_feedback.png"))
    page.screenshot(path=str(ARTIFACTS / "run_all.png"))
    assert not page.console_errors, page.console_errors


def test_dashboard_widget_renders_and_responds(page):
    nb = _notebook_json(page)
    index = _cell_index(nb, lambda s: s.strip() == DASHBOARD_CELL)
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in nb["cells"][index]["outputs"])
    cell = _show_cell(page, index, "dashboard")
    board = cell.locator(".course-dashboard")
    board.wait_for(state="visible")
    row = board.locator("tr[data-exercise='00_start_here.celsius_to_fahrenheit']")
    row.wait_for(state="visible")
    assert "Your progress" in board.inner_text()
    board.screenshot(path=str(ARTIFACTS / "dashboard.png"))
    # a change in the browser goes to the kernel and comes back as a new view
    rows = board.locator("tr.exercise")
    n_all = rows.count()
    assert n_all >= 1
    board.locator("button", has_text="incorrect").click()
    page.wait_for_function("""() => {
        const board = document.querySelector("[data-course-test='dashboard'] .course-dashboard");
        const rows = [...board.querySelectorAll('tr.exercise')];
        return (rows.length === 0 && board.textContent.includes('Nothing to show with this filter'))
            || (rows.length > 0 && rows.every(r => r.dataset.status === 'incorrect'));
    }""")
    assert rows.count() < n_all
    board.screenshot(path=str(ARTIFACTS / "dashboard_filtered.png"))
    board.locator("button", has_text="all").first.click()
    row.wait_for(state="visible")
    page.wait_for_function("() => document.querySelectorAll(\"[data-course-test='dashboard'] tr.exercise\")"
                           f".length === {n_all}")


def test_dashboard_refreshes_after_a_check(page):
    nb = _notebook_json(page)
    answer = _cell_index(nb, lambda s: s.startswith("def celsius_to_fahrenheit"))
    check = _cell_index(nb, lambda s: s.strip() == "ex.celsius_to_fahrenheit.check(celsius_to_fahrenheit)")
    board_index = _cell_index(nb, lambda s: s.strip() == DASHBOARD_CELL)
    board = _show_cell(page, board_index, "dashboard").locator(".course-dashboard")
    row = board.locator("tr[data-exercise='00_start_here.celsius_to_fahrenheit']")
    assert row.get_attribute("data-status") != "correct"
    count_before = nb["cells"][board_index]["execution_count"]
    # the learner writes the answer and runs the answer cell and the check cell
    page.evaluate(_js(f"""
        panel.content.model.cells.get({answer}).sharedModel.setSource({json.dumps(ANSWER)});
        panel.content.activeCellIndex = {answer};
        return window.jupyterapp.commands.execute('notebook:run-cell').then(() => {{
          panel.content.activeCellIndex = {check};
          return window.jupyterapp.commands.execute('notebook:run-cell');
        }});
    """), f"{LESSON}.ipynb")
    page.wait_for_function(_js(f"""
        const c = panel.content.model.cells.get({check});
        const o = c.outputs.length ? JSON.stringify(c.outputs.get(0).toJSON()) : '';
        return o.includes('Correct') && panel.sessionContext.session.kernel.status === 'idle';
    """), arg=f"{LESSON}.ipynb")
    _show_cell(page, check, "check2").locator(".jp-OutputArea-output", has_text="Correct").wait_for(state="visible")
    board = _show_cell(page, board_index, "dashboard3").locator(".course-dashboard")
    board.locator("tr[data-exercise='00_start_here.celsius_to_fahrenheit'][data-status='correct']").wait_for(
        state="visible")
    assert board.inner_text().startswith("Your progress: 1 of "), board.inner_text()[:200]
    nb = _notebook_json(page)
    assert nb["cells"][board_index]["execution_count"] == count_before, "the dashboard cell was not re-run"
    board.screenshot(path=str(ARTIFACTS / "dashboard_after_check.png"))


def _open(page, path: str) -> None:
    page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', {path}).then(() => true)", path)


def _edit_elsewhere(path: Path, marker: str) -> None:
    nb = nbformat.read(path, as_version=4)
    i = next(i for i, c in enumerate(nb.cells) if c.source.startswith("def celsius_to_fahrenheit"))
    nb.cells[i].source = f"def celsius_to_fahrenheit(celsius):\n    return celsius * 9 / 5 + 32  # {marker}\n"
    nbformat.write(nb, path)


def _age(path: Path, seconds: float) -> None:
    st = path.stat()
    os.utime(path, (st.st_atime - seconds, st.st_mtime - seconds))


def test_learner_notebooks_show_once_in_the_file_browser(page, lab):
    listing = page.evaluate("""() => window.jupyterapp.serviceManager.contents.get('')
        .then(m => m.content.map(x => x.name))""")
    assert f"{LESSON}.ipynb" in listing and f"{LESSON}.py" not in listing, listing


def test_notebook_edited_elsewhere_opens_with_the_learners_work(page, lab):
    """Edited in VS Code / Colab / a script, with a stale .py of the old layout beside it (newer,
    as after a pull): JupyterLab shows the learner's answer, and saving writes no .py."""
    work = lab["work"]
    name = "edited_elsewhere"
    ipynb = work / f"{name}.ipynb"
    ipynb.write_text((build.NOTEBOOKS / f"{LESSON}.ipynb").read_text())
    stale = ipynb.with_suffix(".py")
    stale.write_text(build.py_text(nbformat.read(ipynb, as_version=4), stale))  # fresh stubs
    _edit_elsewhere(ipynb, "my answer, written in VS Code")
    _age(ipynb, 120)  # the stale text file is the newer one
    path = f"{name}.ipynb"
    _open(page, path)
    page.wait_for_function(_js("return !!panel && panel.context.isReady && panel.content.model.cells.length > 0;"),
                           arg=path)
    sources = page.evaluate(_js("""
        const out = [];
        const cells = panel.content.model.cells;
        for (let i = 0; i < cells.length; i++) out.push(cells.get(i).sharedModel.getSource());
        return out;"""), path)
    assert any("my answer, written in VS Code" in src for src in sources), sources
    index = next(i for i, src in enumerate(sources) if "my answer" in src)
    _show_cell(page, index, "edited-elsewhere", path).locator(".jp-InputArea", has_text="my answer").wait_for(
        state="visible")
    page.screenshot(path=str(ARTIFACTS / "edited_elsewhere.png"))
    stale.unlink()
    page.evaluate(_js("return panel.context.save().then(() => true);"), path)
    assert "my answer, written in VS Code" in ipynb.read_text()
    assert not stale.exists(), "saving a learner notebook must not create a text pair"


def test_stale_solution_py_does_not_win_silently(page, lab):
    """A solution notebook edited elsewhere while its .py (the pair) is older: JupyterLab shows
    jupytext's refusal, naming which file is newer, and neither file changes."""
    sol = lab["work"] / "solutions"
    ipynb, py = sol / f"{LESSON}.ipynb", sol / f"{LESSON}.py"
    _edit_elsewhere(ipynb, "author edit in the notebook")
    _age(py, 120)
    before = ipynb.read_text(), py.read_text()
    _open(page, f"solutions/{LESSON}.ipynb")
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(state="visible")
    text = dialog.inner_text()
    assert "more recent than" in text, text
    dialog.screenshot(path=str(ARTIFACTS / "stale_solution_py_refused.png"))
    dialog.locator("button").last.click()
    assert (ipynb.read_text(), py.read_text()) == before
