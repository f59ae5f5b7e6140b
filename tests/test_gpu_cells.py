"""GPU-only cells: every one is marked, and tools/gpu_cells.py can run and report them (issue 26).

CI has no GPU. A cell that only means something on one starts with `if requires_gpu(...)` and
carries the cell tag `gpu-only`, so a machine with a GPU can find and run exactly those cells
(`python tools/gpu_cells.py run ...`) and keep what they print (`docs/gpu_runs/`)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUARD = re.compile(r"^if requires_gpu\(", re.M)


def load_tool():
    spec = importlib.util.spec_from_file_location("gpu_cells", ROOT / "tools" / "gpu_cells.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("notebook", sorted((ROOT / "solutions").glob("*.ipynb")), ids=lambda p: p.stem)
def test_gpu_only_cells_are_tagged_and_tagged_cells_are_gpu_only(notebook):
    tool = load_tool()
    for index, tags, source in tool.code_cells(notebook.stem):
        guarded = bool(GUARD.search(source))
        assert guarded == (tool.TAG in tags), (
            f"{notebook.name} cell {index}: a cell guarded by `if requires_gpu(...)` needs the tag "
            f"{tool.TAG!r}, and only such a cell may carry it (tags {tags})")


def test_lesson_10_has_its_gpu_cells_marked():
    tool = load_tool()
    tagged = [i for i, tags, _ in tool.code_cells("10_performance") if tool.TAG in tags]
    assert len(tagged) == 5


def _notebook(cells: list[tuple[str, list[str]]]) -> dict:
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
            "cells": [{"cell_type": "code", "metadata": {"tags": tags}, "source": src, "outputs": [],
                       "execution_count": None} for src, tags in cells]}


def test_run_executes_in_order_writes_files_and_records_errors(tmp_path, monkeypatch):
    tool = load_tool()
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    nb = _notebook([
        ("import os\nworkdir = os.getcwd()\nprint('start')", []),
        ("%%writefile {workdir}/script.py\nVALUE = 41\n", []),
        ("import sys\nsys.path.insert(0, workdir)\nimport script\nprint(script.VALUE + 1)", []),
        ("from course_utils.lesson_props.l10_devices import requires_gpu\n", []),
        ("if requires_gpu('a demo'):\n    print('on the GPU')", ["gpu-only"]),
        ("1 / 0", ["raises-exception"]),
        ("print('after the error')", []),
    ])
    (solutions / "99_demo.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    monkeypatch.setattr(tool, "SOLUTIONS", solutions)
    record = tool.run("99_demo")
    outputs = [c["output"].strip() for c in record["cells"]]
    assert outputs[0] == "start" and outputs[2] == "42" and outputs[6] == "after the error"
    assert record["cells"][5]["error"].startswith("ZeroDivisionError")
    gpu = record["cells"][4]
    assert gpu["tags"] == ["gpu-only"]
    import torch

    if not torch.cuda.is_available():
        assert "[GPU only] skipped: a demo" in gpu["output"]
    assert record["machine"]["torch"] == torch.__version__

    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "99_demo.json").write_text(json.dumps(record), encoding="utf-8")
    monkeypatch.setattr(tool, "RUNS", runs)
    text = tool.report_text()
    assert "## 99_demo" in text and "if requires_gpu('a demo')" in text and "(stale)" not in text
    assert "1 / 0" not in text, "only gpu-only cells are reported"
    nb["cells"][4]["source"] = "if requires_gpu('a demo'):\n    print('changed')"
    (solutions / "99_demo.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    assert "Cell 4 (stale)" in tool.report_text()
