"""``python -m course_utils doctor``: OK/FAIL per requirement, a fix for each FAIL."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from course_utils import doctor


@pytest.mark.slow  # runs the command in a subprocess
def test_this_environment_passes_and_the_command_says_so():
    proc = subprocess.run([sys.executable, "-m", "course_utils", "doctor"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("Python", "torch version", "torch works", "device", "JupyterLab", "ipywidgets", "jupytext",
                 "Jupyter kernel", "other packages", "course package", "progress log"):
        assert any(line.split("  ")[0] in ("OK", "INFO", "WARN") and f" {name} " in f" {line} "
                   for line in proc.stdout.splitlines()), f"no OK line for {name}:\n{proc.stdout}"
    assert "FAIL" not in proc.stdout


def test_json_output(capsys):
    assert doctor.main(["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"name", "status", "detail", "fix"} <= set(data[0])
    assert all(c["status"] in ("OK", "INFO", "WARN") for c in data)


def test_python_version_range_warns_outside_the_tested_range():
    for good in ((3, 10, 0), (3, 11, 4), (3, 12, 1), (3, 13, 0)):
        assert doctor.check_python(good).status == "OK", good
    for other in ((3, 9, 18), (3, 14, 0)):
        c = doctor.check_python(other)
        assert c.status == "WARN" and "3.10–3.13" in c.detail and c.fix
        assert c.ok  # a warning is not a failure


@pytest.mark.parametrize("version", ["2.8.0+cu128", "2.10.1", "2.13.0+cpu", "2.13.1", "2.14.1", "2.15.0+cu130"])
def test_torch_in_the_tested_range_is_ok(monkeypatch, version):
    import torch

    monkeypatch.setattr(torch, "__version__", version)
    assert {c.name: c for c in doctor.check_torch()}["torch version"].status == "OK"


@pytest.mark.parametrize("version", ["2.5.1+cu121", "2.16.0.dev20270101", "3.0.0"])
def test_torch_outside_the_tested_range_warns_with_the_install_command(monkeypatch, version):
    import torch

    monkeypatch.setattr(torch, "__version__", version)
    checks = {c.name: c for c in doctor.check_torch()}
    assert checks["torch version"].status == "WARN" and "2.8–2.15" in checks["torch version"].detail
    assert "torch==2.13.0" in checks["torch version"].fix and "download.pytorch.org" in checks["torch version"].fix
    assert checks["torch works"].status == "OK"
    assert all(c.ok for c in checks.values())  # warnings keep the exit status 0


def test_placeholder_repository_warns(monkeypatch):
    from course_utils import links

    monkeypatch.setattr(links, "COURSE_REPO", "OWNER/REPO")
    c = doctor.check_links()
    assert c.status == "WARN" and "course_utils/links.py" in c.fix
    monkeypatch.setattr(links, "COURSE_REPO", "someone/pytorch-course")
    assert doctor.check_links().status == "OK"


def test_package_requirements_come_from_metadata_without_a_clone(monkeypatch):
    requires = ["torch<3,>=2.8", "tqdm>=4.66", 'onnx>=1.16; extra == "export"', 'pytest>=8; extra == "test"']
    monkeypatch.setattr(doctor.md, "requires", lambda name: requires)
    monkeypatch.setattr(doctor, "ROOT", doctor.ROOT / "no-such-clone")
    monkeypatch.setattr(doctor, "_version", lambda d: {"tqdm": "4.70"}.get(d))
    checks = {c.name: c for c in doctor.check_packages()}
    assert checks["onnx"].status == "WARN" and "course_utils[export]" in checks["onnx"].fix
    assert "pytest" not in checks and "torch" not in checks
    assert checks["other packages"].status == "OK" and "tqdm" in checks["other packages"].detail


def test_missing_or_old_packages_fail(monkeypatch):
    versions = {"jupyterlab": "3.6.7", "ipywidgets": None, "jupytext": "1.14.0"}
    monkeypatch.setattr(doctor, "_version", lambda d: versions.get(d, "99"))
    for fn, needle in ((doctor.check_jupyterlab, "jupyterlab>=4.2"), (doctor.check_widgets, "ipywidgets>=8.1"),
                       (doctor.check_jupytext, "jupytext>=1.16")):
        c = fn()
        assert c.status == "FAIL" and needle in c.fix, c


def test_missing_lab_extensions_fail(monkeypatch):
    monkeypatch.setattr(doctor, "_labextension", lambda name: None)
    w, j = doctor.check_widgets(), doctor.check_jupytext()
    assert w.status == "FAIL" and "extension is missing" in w.detail and "jupyterlab_widgets" in w.fix
    assert j.status == "FAIL" and "JupyterLab extension is missing" in j.detail


def test_disabled_jupytext_server_extension_fails(monkeypatch):
    monkeypatch.setattr(doctor, "_jupytext_server_extension_enabled", lambda: False)
    c = doctor.check_jupytext()
    assert c.status == "FAIL" and "server extension" in c.detail and "enable" in c.fix


def test_kernel_running_another_python_fails(monkeypatch):
    from jupyter_client import kernelspec

    class Spec:
        argv = ["/opt/other/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"]

    monkeypatch.setattr(kernelspec.KernelSpecManager, "get_kernel_spec", lambda self, name: Spec())
    c = doctor.check_kernel()
    assert c.status == "FAIL" and "/opt/other/bin/python" in c.detail and "ipykernel install" in c.fix


def test_requirements_are_checked(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("torch==2.13.0\ntqdm<1  # too old on purpose\nno-such-package-for-the-course>=1\n"
                   "pytest>=8\n-e .\n")
    checks = {c.name: c for c in doctor.check_packages(req)}
    assert checks["tqdm"].status == "FAIL" and "does not satisfy <1" in checks["tqdm"].detail
    assert checks["no-such-package-for-the-course"].status == "FAIL"
    assert 'pip install "no-such-package-for-the-course>=1"' in checks["no-such-package-for-the-course"].fix
    assert "torch" not in checks and "pytest" not in checks  # checked elsewhere / test-only


def test_unwritable_progress_log_fails(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    c = doctor.check_progress_log(blocker / "progress.jsonl")
    assert c.status == "FAIL" and "COURSE_PROGRESS_LOG" in c.fix
    ok = doctor.check_progress_log(tmp_path / "logs" / "progress.jsonl")
    assert ok.status == "OK" and not (tmp_path / "logs" / "progress.jsonl").exists()
    monkeypatch.setenv("COURSE_PROGRESS_LOG", "")
    assert doctor.check_progress_log().status == "INFO"


def test_exit_code_and_fix_lines_on_failure(monkeypatch, capsys):
    def broken():
        raise RuntimeError("boom")

    monkeypatch.setattr(doctor, "CHECKS", [
        lambda: doctor.ok("fine", "yes"),
        lambda: doctor.fail("thing", "is missing", "install the thing"),
        broken,
    ])
    assert doctor.main([]) == 1
    out = capsys.readouterr().out
    assert "OK    fine" in out and "FAIL  thing" in out and "fix: install the thing" in out
    assert "the check itself crashed (RuntimeError: boom)" in out
    assert "2 problems found." in out


@pytest.mark.parametrize("fn", doctor.CHECKS)
def test_every_check_returns_checks(fn):
    res = fn()
    for c in res if isinstance(res, list) else [res]:
        assert isinstance(c, doctor.Check) and c.status in ("OK", "WARN", "FAIL", "INFO")
        assert c.status not in ("FAIL", "WARN") or c.fix
