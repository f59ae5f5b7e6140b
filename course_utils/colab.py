"""The first cells of every learner notebook: a Colab badge, and a setup cell for Colab.

``python -m course_utils build`` inserts them after each learner notebook's title. The setup
cell does nothing where the course package is importable (a clone set up with the README,
Binder, a JupyterHub image); elsewhere (Colab, a bare Jupyter) it pip-installs the course
package from :func:`course_utils.links.pip_source` and the lesson's extra packages
(:data:`LESSON_EXTRAS`, from pyproject.toml's optional dependencies), then says what it did.
On Colab it keeps Colab's own torch, NumPy, Matplotlib and widgets (``--no-deps``); elsewhere
pip installs whatever else is missing.

Two environment variables exist for testing the cell offline (tests/test_colab.py):
``COURSE_PIP_SOURCE`` (what to install instead of the git URL, e.g. a ``file://`` wheel) and
``COURSE_PIP_ARGS`` (extra pip arguments, e.g. ``--no-index --find-links DIR``).
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import nbformat

from . import links

SETUP_TAG = "course-setup"
# Lessons (by number) that need one of the package's optional extras.
LESSON_EXTRAS = {"09": "export"}
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def extra_requirements(extra: str, pyproject: Path = PYPROJECT) -> list[str]:
    """The requirement strings of an optional extra, read from pyproject.toml."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return list(data["project"]["optional-dependencies"][extra])


def setup_source(stem: str) -> str:
    extra = LESSON_EXTRAS.get(stem[:2])
    reqs = extra_requirements(extra) if extra else []
    spec = f"course_utils[{extra}]" if extra else "course_utils"
    colab_extra = f"\n        subprocess.run(pip + {reqs!r}, check=True)" if reqs else ""
    names = ", ".join(re.split("[<>=!~ ;]", r)[0] for r in reqs)
    also = f" and this lesson's {names}" if reqs else ""
    return f'''# Colab, or a Jupyter without the course package: install it, then say so.
# Set up with the README (or on Binder or a JupyterHub)? This cell does nothing.
import importlib.util, os, subprocess, sys

if importlib.util.find_spec("course_utils") is None:
    source = os.environ.get("COURSE_PIP_SOURCE", "{links.pip_source()}")
    pip = [sys.executable, "-m", "pip", "install", "-q", *os.environ.get("COURSE_PIP_ARGS", "").split()]
    if "google.colab" in sys.modules:  # keep Colab's own torch, NumPy, Matplotlib, widgets
        subprocess.run(pip + ["--no-deps", f"course_utils @ {{source}}"], check=True){colab_extra}
    else:
        subprocess.run(pip + [f"{spec} @ {{source}}"], check=True)
    importlib.invalidate_caches()
    print(f"Installed the course package from {{source}}{also}. Run the notebook from here on.")'''


def badge_source(stem: str) -> str:
    return (f"{links.colab_badge(f'notebooks/{stem}.ipynb')}\n\n"
            "*On Colab or a Jupyter without the course installed, run the next cell first: it installs "
            "the course package. Anywhere else it does nothing.*")


def is_course_lesson(stem: str) -> bool:
    """A lesson of this repository (its Colab link exists), not a made-up one in a test."""
    return bool(re.match(r"\d\d_\w+$", stem)) and (PYPROJECT.parent / "solutions" / f"{stem}.py").exists()


def setup_cells(cells: list, stem: str) -> list:
    """``cells`` with the badge and setup cells after the title cell (a new list)."""
    meta = {"tags": [SETUP_TAG]}
    new = [nbformat.v4.new_markdown_cell(badge_source(stem), metadata=dict(meta)),
           nbformat.v4.new_code_cell(setup_source(stem), metadata=copy.deepcopy(meta))]
    at = 1 if cells and cells[0].cell_type == "markdown" and cells[0].source.startswith("#") else 0
    return list(cells[:at]) + new + list(cells[at:])
