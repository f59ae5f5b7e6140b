"""Run the lessons' GPU-only cells where a GPU is, and keep what they printed.

A cell that only means something on a GPU starts with ``if requires_gpu(...)`` and carries the
cell tag ``gpu-only`` (``tests/test_gpu_cells.py`` keeps the two together). CI has no GPU, so those
cells only ever print "skipped" there. When a GPU machine is at hand::

    python tools/gpu_cells.py run 10_performance 11_distributed --out DIR   # on the GPU machine
    python tools/gpu_cells.py ddp DIR                                         # lesson 11's script on GPUs
    cp DIR/*.json docs/gpu_runs/ && python tools/gpu_cells.py report          # here: docs/gpu_outputs.md

``run`` executes a solution notebook's code cells in order in one namespace, as Run All would,
with nothing but the Python standard library to read the notebook (a GPU machine may have no
Jupyter). ``%%writefile`` cells are written; widget cells get a stand-in ``interact`` that does
nothing when ipywidgets is missing. Every cell's output is recorded; ``report`` turns the records of
the ``gpu-only`` cells into ``docs/gpu_outputs.md``, with the source of each cell, the device,
the PyTorch version and the date, and marks a record whose cell has changed since as stale.
``ddp`` runs lesson 11's ``torchrun`` script with one rank per GPU (NCCL), then loads the saved
weights with and without ``map_location``, as the lesson's check cell does.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import traceback
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
RUNS = ROOT / "docs" / "gpu_runs"
REPORT = ROOT / "docs" / "gpu_outputs.md"
TAG = "gpu-only"


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def code_cells(stem: str) -> list[tuple[int, list[str], str]]:
    """(index among the notebook's cells, tags, source) of every code cell of a solution."""
    nb = json.loads((SOLUTIONS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return [(i, list(c.get("metadata", {}).get("tags", [])), _source(c))
            for i, c in enumerate(nb["cells"]) if c.get("cell_type") == "code"]


def _stub_ipywidgets() -> None:
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        stub = types.ModuleType("ipywidgets")
        for name in ("IntSlider", "FloatSlider", "Checkbox", "Dropdown", "fixed"):
            setattr(stub, name, lambda *a, **k: None)
        stub.interact = lambda *a, **k: None  # type: ignore[attr-defined]
        sys.modules["ipywidgets"] = stub


def _run_cell(source: str, namespace: dict[str, Any]) -> tuple[str, str | None]:
    """Run one cell; return (what it printed, the error's last line or None)."""
    out = io.StringIO()
    error = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            if source.startswith("%%writefile"):
                first, _, body = source.partition("\n")
                path = first.split(None, 1)[1].format(**namespace)
                Path(path).write_text(body, encoding="utf-8")
                print(f"Writing {path}")
            else:
                lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
                exec(compile("\n".join(lines), "<cell>", "exec"), namespace)  # noqa: S102 - our own lesson
        except BaseException as exc:  # noqa: BLE001 - a cell's error is recorded, like Run All shows it
            if isinstance(exc, KeyboardInterrupt):
                raise
            error = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return out.getvalue(), error


def machine() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"torch": torch.__version__, "python": sys.version.split()[0],
                            "date": dt.date.today().isoformat(), "cuda": torch.cuda.is_available()}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(device=props.name, capability=f"{props.major}.{props.minor}",
                    memory_gib=round(props.total_memory / 2**30, 1), gpus=torch.cuda.device_count(),
                    cuda_version=torch.version.cuda)
    return info


def run(stem: str) -> dict[str, Any]:
    """Run a solution notebook's code cells in order; return the record of every cell."""
    import matplotlib

    matplotlib.use("Agg")
    _stub_ipywidgets()
    cwd = os.getcwd()
    scratch = tempfile.mkdtemp(prefix=f"gpu_cells_{stem}_")
    os.chdir(scratch)
    sys.path.insert(0, str(ROOT))
    namespace: dict[str, Any] = {"__name__": "__main__", "display": print}
    cells = []
    try:
        for index, tags, source in code_cells(stem):
            output, error = _run_cell(source, namespace)
            cells.append({"index": index, "tags": tags, "source_sha": source_hash(source), "source": source,
                          "output": output, "error": error})
            print(f"{stem} cell {index}{' [gpu-only]' if TAG in tags else ''}: "
                  f"{'error ' + error if error else 'ok'}", flush=True)
    finally:
        os.chdir(cwd)
    return {"lesson": stem, "machine": machine(), "cells": cells}


def ddp(out: Path) -> dict[str, Any]:
    """Lesson 11's script on this machine's GPUs: one rank per GPU, then its file loaded back."""
    import torch

    script_src = next(src for _, _, src in code_cells("11_distributed") if src.startswith("%%writefile"))
    work = Path(tempfile.mkdtemp(prefix="gpu_ddp_"))
    script = work / "ddp_train.py"
    script.write_text(script_src.split("\n", 1)[1], encoding="utf-8")
    sys.path.insert(0, str(ROOT))
    from course_utils.datasets import digits_split

    X, y, _, _ = digits_split()
    torch.save({"X": X, "y": y}, work / "data.pt")
    gpus = max(1, torch.cuda.device_count())
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={gpus}",
           "-m", "course_utils.ddp_launch", str(script), "--data", str(work / "data.pt"), "--out",
           str(work / "w.pt")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)
    record: dict[str, Any] = {"command": " ".join(cmd[1:]), "returncode": proc.returncode,
                              "stdout": proc.stdout, "stderr_tail": proc.stderr[-2000:]}
    if proc.returncode == 0:
        raw = torch.load(work / "w.pt")
        record["saved_on"] = sorted({str(t.device) for t in raw.values()})
        cpu = torch.load(work / "w.pt", map_location="cpu")
        record["map_location_cpu"] = sorted({str(t.device) for t in cpu.values()})
        try:
            diff = max((raw[k] - cpu[k]).abs().max().item() for k in cpu)
            record["cuda_minus_cpu"] = f"ran: max difference {diff}"
        except RuntimeError as exc:
            record["cuda_minus_cpu"] = f"RuntimeError: {str(exc).splitlines()[0]}"
    result = {"lesson": "11_distributed", "ddp": record, "machine": machine()}
    (out / "11_distributed_ddp.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result


def _fence(text: str, lang: str = "") -> str:
    return f"```{lang}\n{text.rstrip()}\n```\n"


def report_text() -> str:
    """docs/gpu_outputs.md, from the records in docs/gpu_runs/."""
    parts = ["# What the GPU-only cells print on a GPU\n",
             "<!-- generated by `python tools/gpu_cells.py report` from docs/gpu_runs/*.json; do not edit -->\n",
             "CI has no GPU, so the lessons' cells tagged `gpu-only` print \"skipped\" there. These outputs were "
             "recorded by `python tools/gpu_cells.py run` on a machine with one, each cell run in order with the "
             "rest of its lesson. A record marked **stale** was made before the cell last changed.\n"]
    for path in sorted(RUNS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        m = data["machine"]
        where = (f"{m.get('device', 'no GPU')} (compute capability {m.get('capability', '-')}), "
                 f"PyTorch {m['torch']}, CUDA {m.get('cuda_version', '-')}, Python {m['python']}, {m['date']}")
        if "ddp" in data:
            d = data["ddp"]
            parts.append(f"\n## {data['lesson']}: the `torchrun` script on GPUs\n\n{where}.\n\n")
            parts.append(_fence(f"torchrun {d['command'].split('torch.distributed.run ', 1)[-1]}", "bash"))
            parts.append(f"\nExit code {d['returncode']}.\n\n" + _fence(d["stdout"] or "(no output)"))
            if "saved_on" in d:
                parts.append(f"\nThe saved weights load onto {', '.join(d['saved_on'])} by default, onto "
                             f"{', '.join(d['map_location_cpu'])} with `map_location=\"cpu\"`; subtracting the two: "
                             f"{d['cuda_minus_cpu']}.\n")
            continue
        current = {i: (tags, src) for i, tags, src in code_cells(data["lesson"])}
        parts.append(f"\n## {data['lesson']}\n\n{where}.\n")
        for cell in data["cells"]:
            if TAG not in cell["tags"]:
                continue
            now = current.get(cell["index"])
            stale = now is None or source_hash(now[1]) != cell["source_sha"]
            parts.append(f"\n### Cell {cell['index']}{' (stale)' if stale else ''}\n\n")
            parts.append(_fence(cell["source"], "python"))
            shown = cell["output"] + (f"\n{cell['error']}" if cell["error"] else "")
            parts.append("\nprinted:\n\n" + _fence(shown or "(nothing)"))
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run lessons' code cells in order and record their output")
    r.add_argument("lessons", nargs="+")
    r.add_argument("--out", type=Path, required=True)
    d = sub.add_parser("ddp", help="run lesson 11's script with one rank per GPU")
    d.add_argument("out", type=Path)
    rep = sub.add_parser("report", help="write docs/gpu_outputs.md from docs/gpu_runs/")
    rep.add_argument("--check", action="store_true", help="exit 1 if the report is out of date")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        args.out.mkdir(parents=True, exist_ok=True)
        for stem in args.lessons:
            record = run(stem)
            (args.out / f"{stem}.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
        return 0
    if args.cmd == "ddp":
        args.out.mkdir(parents=True, exist_ok=True)
        result = ddp(args.out)
        print(json.dumps(result["ddp"], indent=1))
        return 0 if result["ddp"]["returncode"] == 0 else 1
    text = report_text()
    if args.check:
        if not REPORT.exists() or REPORT.read_text(encoding="utf-8") != text:
            print(f"{REPORT.relative_to(ROOT)} is out of date: run python tools/gpu_cells.py report")
            return 1
        return 0
    REPORT.write_text(text, encoding="utf-8")
    print(f"wrote {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
