#!/usr/bin/env python
"""Build the course website offline, from the notebooks' stored outputs.

    npm ci                                  # once: the widget manager and MathJax to bundle
    python website/build.py                 # -> build/website/html/index.html
    python website/build.py --out DIR       # elsewhere

Two sets of pages: **lessons** (the learner notebooks: stubs where the exercises are, with
the solution's outputs on every cell the learner did not have to write) and **solutions**
(the solution notebooks). Both without solution markers, test tags or ``NBVAL`` comments; the
Colab install cell is left out, its badge kept. Built with Sphinx and MyST-NB (chosen over
mkdocs-jupyter because MyST-NB renders stored outputs without executing, lets the widget
manager script be pointed at a local file, keeps inline code in headings and the navigation,
and Sphinx builds with no network). Widgets render from ``@jupyter-widgets/html-manager``'s
bundle and math from MathJax, both copied from ``node_modules/`` (npm) at build time: the site
loads nothing from a CDN.

Deploy: the output folder is a static site; e.g. for GitHub Pages,
``pip install ghp-import && ghp-import --no-jekyll --push --force build/website/html``.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course_utils import build, colab, links  # noqa: E402

HERE = Path(__file__).resolve().parent
NODE = ROOT / "node_modules"
WIDGETS = NODE / "@jupyter-widgets" / "html-manager" / "dist"
MATHJAX = NODE / "mathjax" / "es5"
TEST_TAGS = {"raises-exception", "nbval-ignore-output", "nbval-skip", "nbval-check-output", "nbval-raises-exception"}
NBVAL_LINE = re.compile(r"^\s*#\s*NBVAL_\w+\s*$")
MARKER_LINE = re.compile(r"^\s*###\s*(BEGIN|END) (SOLUTION|PREDICTION)\s*$")
# Cells whose stored (solution) output would give the answer away or claim it is correct.
BADGE = re.compile(r"\[!\[([^\]]+)\]\([^)]+\)\]\(([^)]+)\)")
REVEALING = re.compile(r"\bex\.\w+\.(check|solution)\(")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# Widget models a reader acts on: on a page, moving or clicking one changes nothing else, since
# the Python that would recompute the output is not running (progress bars, HTML, boxes only show).
CONTROL_MODEL = re.compile(r"(Slider|Dropdown|Button|Buttons|Checkbox|Text|Textarea|Select|SelectMultiple"
                           r"|RadioButtons|Combobox|Picker|Play)Model$")
MODEL_REF = re.compile(r"IPY_MODEL_(\w+)")


def _clean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """No solution markers, test tags or NBVAL comments; the Colab install cell removed."""
    cells = []
    for cell in nb.cells:
        tags = [t for t in cell.metadata.get("tags", []) if t not in TEST_TAGS]
        if cell.cell_type == "code" and colab.SETUP_TAG in tags:
            continue
        if colab.SETUP_TAG in tags:  # the badge, without the note about the install cell
            cell.source = cell.source.split("\n\n")[0]
        tags = [t for t in tags if t not in (colab.SETUP_TAG, build.SOLUTION_ONLY)]
        cell.metadata = {"tags": tags} if tags else {}
        if cell.cell_type == "code":
            cell.source = "\n".join(ln for ln in cell.source.splitlines()
                                    if not NBVAL_LINE.match(ln) and not MARKER_LINE.match(ln))
        else:  # badges as plain links: the site loads no image from elsewhere
            cell.source = BADGE.sub(r"[\1](\2)", cell.source)
        cells.append(cell)
    nb.cells = cells
    return nb


def needs_kernel(cell: nbformat.NotebookNode, state: dict) -> bool:
    """Whether an output of ``cell`` is a widget with a control in it (found through the models
    its view refers to, in the notebook's stored widget ``state``)."""
    todo = [o["data"][WIDGET_VIEW]["model_id"] for o in cell.get("outputs", []) if WIDGET_VIEW in o.get("data", {})]
    seen: set[str] = set()
    while todo:
        model_id = todo.pop()
        if model_id in seen or model_id not in state:
            continue
        seen.add(model_id)
        model = state[model_id]
        if CONTROL_MODEL.search(model.get("model_name", "")):
            return True
        todo.extend(MODEL_REF.findall(json.dumps(model.get("state", {}))))
    return False


def kernel_note(path: str) -> str:
    """The note under a widget: on the site its controls move but nothing is recomputed."""
    return f""":::{{admonition}} This widget needs a running Python kernel
:class: note kernel-note

On this page its controls move, but nothing is recomputed: what it shows was stored when the
lesson was run. To use it, open the notebook where Python runs: [on Binder]({links.binder_url(path)}),
[on Colab]({links.colab_url(path)}), or in JupyterLab on your machine (`python -m course_utils lab`,
see [the README]({links.repo_url()})), and run its cells.
:::"""


def with_kernel_notes(nb: nbformat.NotebookNode, path: str) -> nbformat.NotebookNode:
    """``nb`` with :func:`kernel_note` after every cell that shows a widget with a control."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        if cell.cell_type == "code" and needs_kernel(cell, state):
            cells.append(nbformat.v4.new_markdown_cell(kernel_note(path)))
    nb.cells = cells
    return nb


def _solution(stem: str) -> nbformat.NotebookNode:
    return nbformat.read(build.SOLUTIONS / f"{stem}.ipynb", as_version=4)


def learner_page(stem: str) -> nbformat.NotebookNode:
    """The learner notebook with the solution's outputs where the cell is the same and shows
    no answer."""
    solution = _solution(stem)
    learner = build.learner_notebook(solution, stem)
    kept = [c for c in solution.cells if build.SOLUTION_ONLY not in c.metadata.get("tags", [])]
    mine_cells = [c for c in learner.cells if colab.SETUP_TAG not in c.metadata.get("tags", [])]
    assert len(kept) == len(mine_cells)
    for mine, theirs in zip(mine_cells, kept):
        if mine.cell_type == "code" and mine.source == theirs.source and not REVEALING.search(mine.source):
            mine.outputs = copy.deepcopy(theirs.outputs)
            mine.execution_count = theirs.execution_count
    if "widgets" in solution.metadata:
        learner.metadata["widgets"] = copy.deepcopy(solution.metadata["widgets"])
    return with_kernel_notes(_clean(learner), f"notebooks/{stem}.ipynb")


def solution_page(stem: str) -> nbformat.NotebookNode:
    nb = with_kernel_notes(_clean(_solution(stem)), f"solutions/{stem}.ipynb")
    first = nb.cells[0]
    if first.cell_type == "markdown" and first.source.startswith("# "):
        title, _, rest = first.source.partition("\n")
        first.source = f"{title} (solutions)\n{rest}"
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(
        f"*The solved version of [the lesson](../lessons/{stem}.ipynb): every exercise answered, "
        "as its check accepts it.*"))
    return nb


def vendor(static: Path) -> None:
    for what, src in (("@jupyter-widgets/html-manager", WIDGETS), ("mathjax", MATHJAX)):
        if not src.is_dir():
            raise SystemExit(f"{src} is missing: run `npm ci` in {ROOT} first (it installs {what}).")
    shutil.copytree(WIDGETS, static / "widgets", ignore=shutil.ignore_patterns("*.map"))
    (static / "mathjax" / "output" / "chtml").mkdir(parents=True)
    shutil.copy(MATHJAX / "tex-chtml.js", static / "mathjax" / "tex-chtml.js")
    shutil.copytree(MATHJAX / "output" / "chtml" / "fonts", static / "mathjax" / "output" / "chtml" / "fonts")


def _index(stems: list[str]) -> str:
    lessons = "\n".join(f"lessons/{s}" for s in stems)
    solutions = "\n".join(f"solutions/{s}" for s in stems)
    return f"""# PyTorch from the ground up

An interactive notebook course that teaches PyTorch from tensors to multi-process training and
model export. These pages show every lesson with the outputs it produces; to do the exercises,
open a lesson where it runs: [on Binder]({links.binder_url()}), on Colab (the link at the top of
each lesson), or on your machine ([{links.repo_url()}]({links.repo_url()}), README).

```{{toctree}}
:caption: Lessons
:maxdepth: 1

{lessons}
```

```{{toctree}}
:caption: Solutions
:maxdepth: 1

{solutions}
```
"""


def write_sources(src: Path, stems: list[str]) -> None:
    if src.exists():
        shutil.rmtree(src)
    for folder in ("lessons", "solutions"):
        (src / folder).mkdir(parents=True)
    for stem in stems:
        nbformat.write(learner_page(stem), src / "lessons" / f"{stem}.ipynb")
        nbformat.write(solution_page(stem), src / "solutions" / f"{stem}.ipynb")
    (src / "index.md").write_text(_index(stems), encoding="utf-8")
    for name in ("conf.py", "course_a11y.py"):
        shutil.copy(HERE / name, src / name)
    static = src / "_static"
    static.mkdir()
    for name in ("course.css", "course.js"):
        shutil.copy(HERE / name, static / name)
    vendor(static)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "website", help="output folder")
    ap.add_argument("lessons", nargs="*", help="lesson stems or prefixes (default: all)")
    args = ap.parse_args(argv)
    stems = [s for s in build.solution_stems() if not args.lessons or any(s.startswith(p) for p in args.lessons)]
    src = args.out / "src"
    write_sources(src, stems)
    html = args.out / "html"
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-j", "1", str(src), str(html)]
    proc = subprocess.run(cmd)
    if proc.returncode:
        return proc.returncode
    print(f"website: {html / 'index.html'} ({len(stems)} lessons, {len(stems)} solution pages)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
