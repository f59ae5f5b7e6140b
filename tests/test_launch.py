from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from course_utils import launch


def test_launch_opens_the_first_notebook_from_the_repo_root():
    cmd = launch.command(["--no-browser"])
    assert cmd[:3] == [sys.executable, "-m", "jupyterlab"]
    assert launch.START in cmd and "--no-browser" in cmd
    assert f"--ServerApp.root_dir={launch.ROOT}" in cmd
    assert (launch.ROOT / launch.START).exists()
    assert ("--allow-root" in cmd) == (os.geteuid() == 0)
    assert launch.command(["--allow-root"]).count("--allow-root") == 1


def test_cli_lists_commands_and_rejects_unknown(capsys):
    from course_utils.__main__ import main

    assert main(["--help"]) == 0 and "build" in capsys.readouterr().out
    assert main(["no-such-command"]) == 2


def test_launch_points_every_url_at_lesson_00():
    """Where no browser opens (SSH, WSL, a server) the learner copies a URL JupyterLab prints:
    it landed on the Launcher at the repository root. The default URL is lesson 00 now, for
    the printed URLs and for `/`; an explicit default_url from the learner wins."""
    cmd = launch.command(["--no-browser"])
    assert f"--LabApp.default_url=/lab/tree/{launch.START}" in cmd
    mine = launch.command(["--LabApp.default_url=/lab/tree/notebooks/03_nn_module.ipynb"])
    assert sum(".default_url" in a for a in mine) == 1
    assert sum(".default_url" in a for a in launch.command(["--ServerApp.default_url=/tree"])) == 1


def _app_dir(folder: Path) -> Path:
    """A JupyterLab application folder of its own (JUPYTERLAB_DIR): this environment's assets,
    and a settings folder that the lab command may write into without touching the venv's."""
    import jupyterlab.commands

    installed = Path(jupyterlab.commands.get_app_dir())
    folder.mkdir(parents=True)
    for part in ("static", "schemas", "themes"):
        if (installed / part).exists():
            (folder / part).symlink_to(installed / part)
    return folder


def test_lab_turns_the_news_pop_up_off_in_the_environments_settings(tmp_path, monkeypatch):
    """JupyterLab asks every new learner about "Jupyter news" in a pop-up over lesson 00 unless
    fetchNews is set: `lab` writes it (and no update check) before starting, keeping what the
    settings file already held."""
    settings = tmp_path / "app" / "settings"
    settings.mkdir(parents=True)
    (settings / "overrides.json").write_text(json.dumps(
        {"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"}}))
    monkeypatch.setenv("JUPYTERLAB_DIR", str(tmp_path / "app"))
    monkeypatch.setattr(launch.course_files, "course_folder", lambda: launch.ROOT)
    monkeypatch.setattr(launch.os, "chdir", lambda path: None)
    ran = []
    monkeypatch.setattr(launch.os, "execv", lambda exe, cmd: ran.append(cmd))
    assert launch.main(["--no-browser"]) == 0 and ran
    written = json.loads((settings / "overrides.json").read_text())
    assert written["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "false", "checkForUpdates": False}
    assert written["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}


@pytest.mark.slow
def test_the_printed_url_opens_lesson_00(tmp_path):
    """A real `python -m course_utils lab --no-browser`: the URLs it prints end in lesson 00's
    path with the token, the URL answers, and `/` redirects there."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "PYTHONPATH": str(launch.ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "JUPYTERLAB_DIR": str(_app_dir(tmp_path / "app"))}
    log = tmp_path / "lab.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "course_utils", "lab", "--no-browser", f"--port={port}",
                                 "--ServerApp.ip=127.0.0.1"], stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        pattern = re.compile(rf"http://127\.0\.0\.1:{port}(\S*)")
        deadline = time.time() + 90
        while not pattern.search(log.read_text()):
            assert proc.poll() is None and time.time() < deadline, log.read_text()[-3000:]
            time.sleep(0.3)
        text = log.read_text()
        paths = pattern.findall(text)
        assert paths and all(p.startswith(f"/lab/tree/{launch.START}?token=") for p in paths), text[-3000:]
        assert f"ends in /lab/tree/{launch.START}?token=" in text
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{paths[0]}", timeout=10) as page:
            assert page.status == 200

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        with pytest.raises(urllib.error.HTTPError) as redirect:
            urllib.request.build_opener(NoRedirect).open(f"http://127.0.0.1:{port}/", timeout=10)
        assert redirect.value.code == 302
        # and the course's lab shows no "Jupyter news" pop-up: the settings it serves say never
        token = paths[0].split("token=", 1)[1]
        api = f"http://127.0.0.1:{port}/lab/api/settings/@jupyterlab/apputils-extension:notification?token={token}"
        with urllib.request.urlopen(api, timeout=10) as answer:  # overrides arrive as the schema's defaults
            served = json.load(answer)["schema"]["properties"]
        assert (served["fetchNews"]["default"], served["checkForUpdates"]["default"]) == ("false", False)
        assert redirect.value.headers["Location"].rstrip("?").endswith(f"/lab/tree/{launch.START}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
