"""A real JupyterHub, as a class uses it: a learner follows an nbgitpuller link and works.

Starts JupyterHub (PyPI ``jupyterhub``; its proxy ``configurable-http-proxy`` from npm, via
``npm ci``) on 127.0.0.1 with the dummy authenticator and the local-process spawner. The
learner servers run from a fresh environment where the course package is installed from a
wheel built from this checkout, NOT editable (the recipe in docs/instructor_guide.md), so the
lesson imports course_utils from site-packages, not from the clone nbgitpuller makes. In
Debian's Chromium (Playwright, as tests/test_browser.py): log in through the nbgitpuller link
(built by ``course_utils.links.nbgitpuller_url``, pointing at a git repository of the course
made in a temporary folder), see the course cloned into the learner's home and lesson 00 open,
*Run All*, answer the exercise and see its check pass. Screenshots: ``artifacts/jupyterhub/``.

Without Chromium, Playwright, jupyterhub, nbgitpuller or the proxy the test is skipped with
the reason, except under CI (``CI`` set), where it fails: .ci/run installs all of them.
"""

from __future__ import annotations

import importlib.util
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
from urllib.parse import quote, urlsplit

import pytest

import wheel_env
from course_utils import links

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts" / "jupyterhub"
CHROMIUM = os.environ.get("COURSE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--disable-background-networking",
                 "--disable-extensions", "--no-first-run", "--disable-component-update"]
LESSON = "00_start_here"
ANSWER = "def celsius_to_fahrenheit(celsius):\n    return celsius * 9 / 5 + 32\n"
CHECK = "ex.celsius_to_fahrenheit.check(celsius_to_fahrenheit)"


def proxy_command() -> str | None:
    local = ROOT / "node_modules" / ".bin" / "configurable-http-proxy"
    return str(local) if local.exists() else shutil.which("configurable-http-proxy")


def _missing() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"Chromium not found at {CHROMIUM} (`apt-get install chromium`)"
    for module, how in (("playwright", "pip install playwright"), ("jupyterhub", "pip install jupyterhub"),
                        ("nbgitpuller", "pip install nbgitpuller")):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (`{how}`, in requirements-dev.txt)"
    if proxy_command() is None:
        return "configurable-http-proxy not found (`npm ci` in the repository root installs it)"
    if shutil.which("git") is None:
        return "git is not installed"
    return None


_MISSING = _missing()
if _MISSING:
    pytestmark.append(pytest.mark.skipif(not os.environ.get("CI"), reason=_MISSING))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _course_repo(folder: Path) -> Path:
    """A git repository holding the course as a class would publish it."""
    folder.mkdir(parents=True)
    for part in ("notebooks", "course_utils"):
        shutil.copytree(ROOT / part, folder / part, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("README.md", "pyproject.toml", "jupytext.toml", "requirements.txt"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, folder / name)
    env = wheel_env.clean_env(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
                              GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")
    for cmd in (["git", "init", "-q", "-b", links.BRANCH], ["git", "add", "-A"],
                ["git", "commit", "-q", "-m", "course"]):
        subprocess.run(cmd, cwd=folder, check=True, env=env)
    return folder


def _wait_http(url: str, proc: subprocess.Popen, log: Path, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # the server answers
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"{url} did not come up:\n" + log.read_text()[-4000:])
        time.sleep(0.5)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if _MISSING:
        pytest.fail(f"CI must run the JupyterHub test: {_MISSING}")
    base = tmp_path_factory.mktemp("hub")
    repo = _course_repo(base / "course.git")
    # the learner image: the course package from its wheel, not editable
    wheel = wheel_env.build_wheel(base / "dist")
    python = wheel_env.make_venv(base / "venv")
    proc = wheel_env.run(python, "-m", "pip", "install", "-q", "--no-deps", str(wheel), cwd=base)
    assert proc.returncode == 0, proc.stderr
    settings = base / "lab-settings"
    for plugin, value in {
        "@jupyterlab/notebook-extension/tracker": {"autoStartDefaultKernel": True},
        "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    }.items():
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    port, api_port, hub_port = _free_port(), _free_port(), _free_port()
    homes = base / "homes"
    homes.mkdir()
    server_env = {k: v for k, v in wheel_env.clean_env().items()
                  if k in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH")}
    server_env.update(JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_DIR=str(Path(sys.prefix) / "share/jupyter/lab"),
                      COURSE_PROGRESS_LOG=str(base / "progress.jsonl"), OMP_NUM_THREADS="1",
                      MPLBACKEND="module://matplotlib_inline.backend_inline")
    args = ["--LabApp.expose_app_in_browser=True", "--LabApp.news_url="]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--allow-root")
    config = base / "jupyterhub_config.py"
    config.write_text(f"""
c = get_config()  # noqa
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.JupyterHub.db_url = "sqlite:///{base / 'hub.sqlite'}"
c.JupyterHub.cookie_secret_file = "{base / 'cookie_secret'}"
c.JupyterHub.pid_file = "{base / 'hub.pid'}"
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = "{homes}/{{username}}"
c.Spawner.cmd = [{str(python)!r}, "-m", "jupyterhub.singleuser"]
c.Spawner.args = {args!r}
c.Spawner.default_url = "/lab"
c.Spawner.environment = {server_env!r}
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.ConfigurableHTTPProxy.command = [{proxy_command()!r}]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.auth_token = "{secrets.token_hex(16)}"
""")
    log_path = base / "hub.log"
    log = open(log_path, "w")
    hub_proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(config)], cwd=base,
                                env=wheel_env.clean_env(), stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{url}/hub/api", hub_proc, log_path)
        yield {"url": url, "repo": repo, "homes": homes, "log": log_path, "python": python}
    finally:
        hub_proc.terminate()
        try:
            hub_proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            hub_proc.kill()
        log.close()
        # learner servers and the proxy are children of the hub; stop any left over
        for pid_file in [base / "hub.pid"]:
            pid_file.unlink(missing_ok=True)


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


def test_learner_follows_an_nbgitpuller_link_runs_lesson_00_and_passes_a_check(hub):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    link = links.nbgitpuller_url(hub["url"], path=f"notebooks/{LESSON}.ipynb", repo=hub["repo"].as_uri())
    assert "/hub/user-redirect/git-pull?" in link and f"targetpath={links.HUB_TARGET}" in link
    split = urlsplit(link)
    login = f"{hub['url']}/hub/login?next={quote(split.path + '?' + split.query, safe='')}"
    path = f"{links.HUB_TARGET}/notebooks/{LESSON}.ipynb"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            pg = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            pg.set_default_timeout(120_000)
            errors: list[str] = []
            pg.on("pageerror", lambda exc: errors.append(str(exc)))
            pg.goto(login)
            pg.fill("input[name=username]", "learner")
            pg.fill("input[name=password]", "any")
            pg.click("#login_submit")
            # the hub starts the server, nbgitpuller clones the course and opens the lesson
            pg.wait_for_url(f"**/user/learner/lab/tree/{path}", timeout=240_000)
            pg.screenshot(path=str(ARTIFACTS / "opened.png"))
            cloned = hub["homes"] / "learner" / links.HUB_TARGET / "notebooks" / f"{LESSON}.ipynb"
            assert cloned.exists(), "nbgitpuller did not clone the course into the learner's home"
            pg.wait_for_function(_js("""
                if (!panel || !panel.context || !panel.context.isReady) return false;
                if (!panel.sessionContext || !panel.sessionContext.session) return false;
                const k = panel.sessionContext.session.kernel;
                return !!k && k.status === 'idle' && panel.content.model.cells.length > 0;
            """), arg=path, timeout=180_000)
            pg.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            pg.wait_for_function(_js("""
                const cells = panel.content.model.cells;
                for (let i = 0; i < cells.length; i++) {
                  const c = cells.get(i);
                  if (c.type === 'code' && c.sharedModel.getSource().trim() && c.executionCount === null) return false;
                }
                return panel.sessionContext.session.kernel.status === 'idle';
            """), arg=path, timeout=240_000)
            nb = pg.evaluate(_js("return panel.content.model.toJSON();"), path)
            sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in nb["cells"]]
            unexpected = [f"cell {i}: {o.get('ename')}: {o.get('evalue')}" for i, c in enumerate(nb["cells"])
                          if c["cell_type"] == "code" for o in c.get("outputs", [])
                          if o["output_type"] == "error" and "raises-exception" not in c["metadata"].get("tags", [])]
            assert not unexpected, unexpected
            answer = next(i for i, s in enumerate(sources) if s.startswith("def celsius_to_fahrenheit"))
            check = next(i for i, s in enumerate(sources) if s.strip() == CHECK)
            assert "Not attempted yet" in json.dumps(nb["cells"][check]["outputs"])
            # the learner answers, runs the answer and its check
            pg.evaluate(_js(f"""
                panel.content.model.cells.get({answer}).sharedModel.setSource({json.dumps(ANSWER)});
                panel.content.activeCellIndex = {answer};
                return window.jupyterapp.commands.execute('notebook:run-cell').then(() => {{
                  panel.content.activeCellIndex = {check};
                  return window.jupyterapp.commands.execute('notebook:run-cell');
                }});
            """), path)
            pg.wait_for_function(_js(f"""
                const c = panel.content.model.cells.get({check});
                const o = c.outputs.length ? JSON.stringify(c.outputs.get(0).toJSON()) : '';
                return o.includes('Correct') && panel.sessionContext.session.kernel.status === 'idle';
            """), arg=path)
            # where the kernel imports the course from: the wheel in site-packages, not the clone
            where = pg.evaluate(_js("""
                const future = panel.sessionContext.session.kernel.requestExecute(
                    {code: "import course_utils; print(course_utils.__file__)"});
                let text = '';
                future.onIOPub = (msg) => { if (msg.header.msg_type === 'stream') text += msg.content.text; };
                return future.done.then(() => text);
            """), path)
            assert "site-packages" in where and str(hub["python"].parent.parent) in where, where
            pg.screenshot(path=str(ARTIFACTS / "check_passed.png"))
            assert not errors, errors
        finally:
            browser.close()
