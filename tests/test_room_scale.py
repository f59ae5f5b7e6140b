"""Issue 24, part A: the room view and the dashboard list the course's exercises from the index
`build` generates (course_utils/exercise_index.py), never by importing the graders (and torch);
`--watch` re-reads only the logs that changed; the room plot's title and legend keep apart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course_utils import build, exercise_index
from course_utils.instructor import room

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys
from course_utils.__main__ import main
rc = main(["progress", "summary", sys.argv[1], "--json", sys.argv[2]])
from course_utils import progress_view
rows = progress_view.read(sys.argv[3]).lessons
from course_utils.dashboard import Dashboard
dash = Dashboard(sys.argv[3], auto_refresh=False)
print(json.dumps({"rc": rc, "lessons": len(rows), "dashboard": dash.text().splitlines()[0],
                  "modules": sorted(sys.modules)}))
"""


def test_room_view_and_dashboard_import_neither_torch_nor_the_graders(tmp_path):
    logs = tmp_path / "logs"
    files = room.synthetic_logs(logs, 4, seed=1)
    proc = subprocess.run([sys.executable, "-c", PROBE, str(logs), str(tmp_path / "room.json"), str(files[0])],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["rc"] == 0
    data = json.loads((tmp_path / "room.json").read_text())
    assert [r["exercise"] for r in data["exercises"]] == [e.id for e in exercise_index.EXERCISES]
    assert out["lessons"] == len({e.lesson for e in exercise_index.EXERCISES})
    assert f"of {len(exercise_index.EXERCISES)} exercises correct" in out["dashboard"]
    heavy = [m for m in out["modules"] if m == "torch" or m.startswith(("torch.", "course_utils.exercises",
                                                                       "course_utils.grading"))]
    assert heavy == [], f"the room view or the dashboard imported {heavy[:8]}"


def test_the_index_lists_what_the_lesson_packages_declare():
    from course_utils.grading import registry

    declared = [(e.id, e.lesson, e.name, e.title, tuple(m.id for m in e.mistakes), float(e.points),
                 float(e.timeout), build._reference_at(e.reference)) for e in registry.all_exercises()]
    assert [tuple(e) for e in exercise_index.EXERCISES] == declared
    # the one reference a lesson package defines at top level (the others come from answers/)
    assert [e.reference for e in exercise_index.EXERCISES if e.reference] == [
        "course_utils.exercises.l02_autograd.dfdx:dfdx_by_autograd"]
    assert build.index_problems() == []


def test_build_check_fails_when_the_index_drifts(tmp_path, monkeypatch):
    real = build.index_path()
    assert real is not None
    stale = tmp_path / "exercise_index.py"
    lines = real.read_text().splitlines(keepends=True)
    stale.write_text("".join(line for line in lines if "01_tensors.attention" not in line))
    monkeypatch.setattr(build, "index_path", lambda: stale)
    problems = build.check([])
    assert any("exercise index" in p and "python -m course_utils build" in p for p in problems), problems
    assert build.write_index() == stale and build.index_problems() == []


@pytest.mark.parametrize("n_rows", [1, 3, 12, 75])
def test_room_plot_keeps_title_legend_and_bars_apart(tmp_path, n_rows):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    ids = [e.id for e in exercise_index.EXERCISES][:n_rows]
    room.synthetic_logs(tmp_path, 20, seed=2, exercises=ids)
    summary = room.room_summary([tmp_path], exercises=ids)
    fig = summary.plot(tmp_path / "room.png", all_rows=True)
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    (ax,) = fig.axes
    title = fig._suptitle.get_window_extent(renderer) if fig._suptitle else ax.title.get_window_extent(renderer)
    legend = (fig.legends or [ax.get_legend()])[0].get_window_extent(renderer)
    axes = ax.get_tightbbox(renderer)  # bars, exercise names, tick labels and axis label
    assert "Room: 20 learners" in (fig._suptitle or ax.title).get_text()
    assert not title.overlaps(legend), (title, legend)
    assert not axes.overlaps(legend) and not axes.overlaps(title), (axes, title, legend)
    for box in (title, legend, axes):  # nothing cut off at the figure's edges
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1
    assert min(t.get_fontsize() for t in ax.get_yticklabels()) >= 10  # readable on a projector


def test_watch_rereads_and_refolds_only_the_logs_that_changed(tmp_path, monkeypatch):
    ids = [e.id for e in exercise_index.EXERCISES][:10]
    files = room.synthetic_logs(tmp_path, 12, seed=4, exercises=ids)
    cache = room.LogCache()
    first = room.room_summary([tmp_path], exercises=ids, cache=cache)
    read, folded = [], []
    real_read, real_fold = room.read_log, room.fold_learner

    def counted_read(path):
        read.append(Path(path))
        return real_read(path)

    def counted_fold(events, validated=False):
        folded.append(len(events))
        return real_fold(events, validated)

    monkeypatch.setattr(room, "read_log", counted_read)
    monkeypatch.setattr(room, "fold_learner", counted_fold)
    same = room.room_summary([tmp_path], exercises=ids, cache=cache)
    assert read == [] and folded == [] and same.to_dict() == first.to_dict()
    with open(files[3], "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"ts": 2e9, "learner": "learner04", "event": "check", "exercise": ids[-1],
                             "status": "incorrect", "mistake": "late"}) + "\n")
    after = room.room_summary([tmp_path], exercises=ids, cache=cache)
    assert read == [files[3]] and len(folded) == 1
    assert after.to_dict() == room.room_summary([tmp_path], exercises=ids).to_dict() != first.to_dict()
    assert after.rows[-1].mistakes["late"] == 1


# ---------------------------------------------------------------------- 300 learners in about a second

SUMMARY_ONLY = """
import contextlib, io, json, runpy, sys
sys.argv = ["course_utils", "progress", "summary", sys.argv[1]]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        runpy.run_module("course_utils", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"rc": code, "modules": sorted(sys.modules)}))
"""

# What `progress summary` (without --plot) must not import: heavy libraries, the graders, the
# learner's one-log view, and the standard modules only demos or HTML need (start-up counts).
NOT_ON_THE_SUMMARY_PATH = ("torch", "matplotlib", "numpy", "pandas", "ipywidgets", "IPython", "nbformat",
                           "nbclient", "course_utils.grading", "course_utils.exercises",
                           "course_utils.progress_view", "course_utils.dashboard", "statistics", "random", "html")


def test_the_summary_command_imports_only_what_it_needs(tmp_path):
    room.synthetic_logs(tmp_path, 5, seed=3)
    proc = subprocess.run([sys.executable, "-c", SUMMARY_ONLY, str(tmp_path)], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["rc"] == 0
    loaded = [m for m in out["modules"]
              if any(m == bad or m.startswith(bad + ".") for bad in NOT_ON_THE_SUMMARY_PATH)]
    assert loaded == [], f"`progress summary` imported {loaded[:8]}"


def test_the_room_view_validates_each_event_once(tmp_path, monkeypatch):
    from course_utils import progress

    files = room.synthetic_logs(tmp_path, 6, seed=5)
    lines = sum(len(f.read_text().splitlines()) for f in files)
    calls = []
    real = progress.event_problem

    def counted(rec):
        calls.append(1)
        return real(rec)

    monkeypatch.setattr(progress, "event_problem", counted)
    summary = room.room_summary([tmp_path])
    assert summary.events == lines and len(calls) == lines  # read_log validated them; folding did not again
    calls.clear()
    room.room_summary([tmp_path], cache=room.LogCache())
    assert len(calls) == lines


def test_summarize_agrees_with_folding_each_exercise_learner_by_learner(tmp_path):
    """The one-walk aggregation gives what the plain definition gives, row by row."""
    from course_utils import progress

    ids = [e.id for e in exercise_index.EXERCISES][:25]
    room.synthetic_logs(tmp_path, 40, seed=6, exercises=ids)
    per = room.learners_events(room.log_files([tmp_path]))
    summary = room.summarize(per, exercises=ids + ["99_gone.extra"], stuck_after=2)
    for row in summary.rows:
        attempted, correct, stuck, working, hints, mistakes = 0, 0, [], [], 0, {}
        for who, evs in per.items():
            p = progress.exercise_progress(evs).get(row.exercise)
            if p is None:
                continue
            hints += p.hints
            latest = [e["exercise"] for e in evs if e["event"] != "prediction"][-1]
            working += [who] if latest == row.exercise else []
            if p.attempts:
                attempted += 1
                correct += p.status == "correct"
                for m, k in p.mistakes.items():
                    mistakes[m] = mistakes.get(m, 0) + k
                if p.status != "correct" and (p.attempts >= 2 or p.solution_viewed):
                    stuck.append(who)
        assert (row.attempted, row.correct, row.stuck, row.working, row.hints, dict(row.mistakes)) == \
               (attempted, correct, stuck, working, hints, mistakes), row.exercise
    assert summary.rows[-1].exercise == "99_gone.extra" and summary.rows[-1].attempted == 0


def test_log_files_lists_a_log_reached_twice_once(tmp_path):
    logs = tmp_path / "logs"
    a, b = room.synthetic_logs(logs, 2, seed=7)
    (logs / "sub").mkdir()
    os.symlink(a, logs / "sub" / "again.jsonl")
    os.link(b, tmp_path / "hard.jsonl")
    (logs / "notes.jsonl").mkdir()  # a folder named like a log is no log
    found = room.log_files([logs, a, tmp_path / "hard.jsonl", logs, tmp_path / "missing.jsonl"])
    assert found == [a, b]
