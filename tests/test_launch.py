from __future__ import annotations

import os
import sys

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
