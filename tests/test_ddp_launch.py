"""The course's torchrun launcher (lesson 10): the script learners study stays a plain script;
the launcher keeps exit codes and output and ends each rank without interpreter teardown."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from course_utils.ddp_launch import torchrun, torchrun_command


def _launch(tmp_path, body: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent(body))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "course_utils.ddp_launch", str(script), "--flag", "x"],
                          capture_output=True, text=True, timeout=120, env=env)


def test_a_script_that_returns_exits_0_with_its_output_flushed(tmp_path):
    res = _launch(tmp_path, """
        import sys
        print("args", sys.argv[1:], end="")   # no newline: only a flush writes it
        sys.stdout.write(" buffered")
    """)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "args ['--flag', 'x'] buffered"


def test_an_exception_prints_its_traceback_and_exits_1(tmp_path):
    res = _launch(tmp_path, """
        def main():
            raise ValueError("bad data")
        if __name__ == "__main__":
            main()
    """)
    assert res.returncode == 1
    assert "ValueError: bad data" in res.stderr and "Traceback" in res.stderr


@pytest.mark.parametrize("call,code,message", [("sys.exit(3)", 3, ""), ("sys.exit('stop here')", 1, "stop here"),
                                              ("sys.exit()", 0, "")])
def test_sys_exit_keeps_its_code(tmp_path, call, code, message):
    res = _launch(tmp_path, f"import sys\n{call}\n")
    assert res.returncode == code
    assert message in res.stderr


def test_no_script_is_a_usage_error():
    res = subprocess.run([sys.executable, "-m", "course_utils.ddp_launch"], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 2 and "usage" in res.stderr


def test_the_command_is_torchrun_standalone_with_the_launcher_as_module():
    cmd = torchrun_command("train.py", "--out", "w.pt", nproc=3)
    assert cmd[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert cmd[3:] == ["--standalone", "--nproc_per_node=3", "-m", "course_utils.ddp_launch", "train.py",
                       "--out", "w.pt"]


@pytest.mark.slow  # starts torchrun with two real ranks
def test_two_gloo_ranks_really_run_and_a_failing_rank_fails_the_launch(tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        import torch, torch.distributed as dist
        dist.init_process_group("gloo")
        t = torch.tensor([float(dist.get_rank() + 1)])
        dist.all_reduce(t)
        if dist.get_rank() == 0:
            print("sum", t.item(), "world", dist.get_world_size(), flush=True)
        dist.barrier()
        dist.destroy_process_group()
        if sys.argv[1:] == ["--fail"]:
            raise SystemExit(5)
    """))
    ok = torchrun(str(script))
    assert ok.returncode == 0, ok.stderr
    assert "sum 3.0 world 2" in ok.stdout
    bad = torchrun(str(script), "--fail")
    assert bad.returncode != 0
