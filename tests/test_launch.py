from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

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


@pytest.mark.slow
def test_the_printed_url_opens_lesson_00(tmp_path):
    """A real `python -m course_utils lab --no-browser`: the URLs it prints end in lesson 00's
    path with the token, the URL answers, and `/` redirects there."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "PYTHONPATH": str(launch.ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
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
        assert redirect.value.headers["Location"].rstrip("?").endswith(f"/lab/tree/{launch.START}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
