"""Test helpers: build the course's wheel from this checkout, and a fresh virtual environment
where the course package is missing (as on Colab or a new machine).

The environment reuses this environment's packages (:func:`inherit_packages`: torch and
JupyterLab are not downloaded again) but hides the course package the base Python has (the
README installs it editable), so ``import course_utils`` fails there until something installs
it into the environment itself.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HIDE = '''# Test scaffolding (tests/wheel_env.py): hide the base Python's course package (an
# editable install's import hook, or the checkout on sys.path), so this environment starts
# without course_utils. Other folders (a grader's sandbox copy of the course) stay.
import os, sys
_checkout = {checkout!r}
sys.meta_path[:] = [f for f in sys.meta_path if "course_utils" not in getattr(f, "__module__", "") + repr(f)]
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != _checkout]
'''


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what would import the checkout's course_utils.

    The base Python's Jupyter data and config folders (JupyterLab extensions, jupytext's
    server extension) are added to the search paths: a venv with --system-site-packages
    reuses the base's packages but Jupyter would not look in the base's share/ and etc/."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    base = Path(sys.prefix)
    env["JUPYTER_PATH"] = os.pathsep.join(
        filter(None, [extra.pop("JUPYTER_PATH", ""), str(base / "share" / "jupyter")]))
    env["JUPYTER_CONFIG_PATH"] = str(base / "etc" / "jupyter")
    env.update(extra)
    return env


def build_wheel(out: Path) -> Path:
    """``pip wheel`` of a copy of the checkout (nothing is written into the checkout)."""
    src = out / "src"
    for part in ("course_utils", "notebooks"):
        shutil.copytree(ROOT / part, src / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(src)], check=True, env=clean_env(), cwd=out)
    return next(out.glob("course_utils-*.whl"))


def inherit_packages(python: Path) -> None:
    """Let the environment of ``python`` see this interpreter's packages, after its own.

    ``python -m venv --system-site-packages`` would give it the *base* interpreter's packages,
    which is wrong when the tests run in a virtual environment (the README's setup: torch and
    JupyterLab are in that venv, not in the base Python). A ``.pth`` line adds this
    environment's site folders instead, with their own ``.pth`` files (an editable install's
    import hook among them: :data:`HIDE` removes the course's)."""
    site_dir = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip()
    dirs = [d for d in site.getsitepackages() if os.path.isdir(d)]
    (Path(site_dir) / "_course_tests_inherit.pth").write_text(
        "import site; " + "; ".join(f"site.addsitedir({d!r})" for d in dirs) + "\n")


def make_venv(where: Path) -> Path:
    """A venv without course_utils that sees this environment's other packages; returns its Python."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    python = where / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    inherit_packages(python)
    site_dir = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip()
    (Path(site_dir) / "sitecustomize.py").write_text(HIDE.format(checkout=os.path.realpath(ROOT)))
    return python


def kernelspec(python: Path, name: str, where: Path) -> Path:
    """A Jupyter kernelspec running ``python``; returns the folder to put on JUPYTER_PATH."""
    import json

    folder = where / "kernels" / name
    folder.mkdir(parents=True)
    (folder / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": name, "language": "python"}))
    return where


def run(python: Path, *args: str, cwd: Path, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), *args], cwd=cwd, env=clean_env(**env), capture_output=True, text=True,
                          timeout=timeout)


__all__ = ["build_wheel", "make_venv", "kernelspec", "run", "clean_env"]
