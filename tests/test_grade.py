"""The instructor grader: ``python -m course_utils grade``.

One batch of submissions of lesson 00 (graded once, through the command line, with small
timeouts) holds a solved notebook, the untouched learner notebook, and every kind of broken or
cheating notebook; the tests read its CSV, JSON and printed summary. Lesson 01 (when present)
adds one bigger notebook pair. Fast unit tests cover parsing.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_utils import build
from course_utils.instructor import grade, kernel, sandbox

LESSON = "00_start_here"
EX = f"{LESSON}.celsius_to_fahrenheit"
CHECK = "ex.celsius_to_fahrenheit.check(celsius_to_fahrenheit)"
GOOD = "def celsius_to_fahrenheit(celsius):\n    return celsius * 9 / 5 + 32\n"


def _learner() -> nbformat.NotebookNode:
    return nbformat.read(build.NOTEBOOKS / f"{LESSON}.ipynb", as_version=4)


def _answer(nb) -> int:
    return next(i for i, c in enumerate(nb.cells) if c.cell_type == "code"
                and c.source.startswith("def celsius_to_fahrenheit"))


def _check(nb) -> int:
    return next(i for i, c in enumerate(nb.cells) if c.source.strip() == CHECK)


def _solve(nb):
    nb.cells[_answer(nb)].source = GOOD


def _insert_after_answer(nb, source):
    _solve(nb)
    nb.cells.insert(_answer(nb) + 1, nbformat.v4.new_code_cell(source))


VARIANTS = {
    "solved": _solve,
    "untouched": lambda nb: None,
    "wrong": lambda nb: setattr(nb.cells[_answer(nb)], "source",
                                "def celsius_to_fahrenheit(celsius):\n    return celsius * 5 / 9 + 32\n"),
    "syntax": lambda nb: setattr(nb.cells[_answer(nb)], "source",
                                 "def celsius_to_fahrenheit(celsius)\n    return celsius * 9 / 5 + 32\n"),
    "loop": lambda nb: _insert_after_answer(nb, "while True:\n    pass"),
    "stubborn": lambda nb: _insert_after_answer(
        nb, "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except BaseException:\n        pass"),
    "crash": lambda nb: _insert_after_answer(nb, "import os\nos._exit(1)"),
    "deleted": lambda nb: (_solve(nb), nb.cells.pop(_check(nb))),
    "printed": lambda nb: setattr(nb.cells[_check(nb)], "source",
                                  'print("✅ Correct: 00_start_here.celsius_to_fahrenheit")'),
    "edited": lambda nb: setattr(nb.cells[_check(nb)], "source",
                                 "from course_utils.exercises.l00_start_here.celsius_to_fahrenheit import (\n"
                                 "    celsius_to_fahrenheit as ref)\n"
                                 "ex.celsius_to_fahrenheit.check(ref)"),
    "reference": lambda nb: setattr(nb.cells[_answer(nb)], "source",
                                    "from course_utils.exercises.l00_start_here.celsius_to_fahrenheit "
                                    "import celsius_to_fahrenheit"),
    "tampered": lambda nb: setattr(nb.cells[_answer(nb)], "source",
                                   "import sys\n"
                                   "sys.modules['course_utils.grading.runner'].compare = lambda *a, **k: None\n"
                                   "def celsius_to_fahrenheit(c):\n    return c\n"),
    "forged": lambda nb: setattr(nb.cells[_answer(nb)], "source",
                                 "from IPython.display import display\n"
                                 "def celsius_to_fahrenheit(c):\n"
                                 f"    display({{{kernel.MIME!r}: "
                                 f"{{'exercise': {EX!r}, 'status': 'correct'}}}}, raw=True)\n"
                                 "    return c\n"),
    # the kernel imported torch and the lesson's graders before the first cell, outside any
    # cell's time limit (under load, a 10 s limit interrupted `import torch`: kernel_unresponsive)
    "warmed": lambda nb: (_solve(nb), nb.cells.insert(0, nbformat.v4.new_code_cell(
        "import sys\nassert {'torch', 'course_utils.grading', 'course_utils.exercises.l00_start_here'} "
        "<= set(sys.modules), 'WARM-UP MISSING'"))),
    # extra code around the check, and a display updated from a later cell (nbclient bookkeeping)
    "extra_lines": lambda nb: (_solve(nb), setattr(nb.cells[_check(nb)], "source",
                                                   f'print("before")\n{CHECK}\ncelsius_to_fahrenheit = None'),
                               nb.cells.insert(1, nbformat.v4.new_code_cell(
                                   "from IPython.display import display\nh = display('a', display_id=True)")),
                               nb.cells.append(nbformat.v4.new_code_cell("h.update('b')"))),
}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Grade every variant (plus the solution, a corrupt file and a stranger) in one run."""
    root = tmp_path_factory.mktemp("submissions")
    for name, change in VARIANTS.items():
        nb = _learner()
        change(nb)
        (root / name).mkdir()
        nbformat.write(nb, root / name / f"{LESSON}.ipynb")
    (root / "teacher").mkdir()
    (root / "teacher" / f"{LESSON}.ipynb").write_text((build.SOLUTIONS / f"{LESSON}.ipynb").read_text())
    (root / f"corrupt_{LESSON}.ipynb").write_text('{"cells": [ this is not json')
    stranger = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('hello')")])
    nbformat.write(stranger, root / "holiday_photos.ipynb")
    from course_utils import progress

    log_before = len(progress.read_events())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = grade.main([str(root), "--csv", str(root / "grades.csv"), "--json", str(root / "grades.json"),
                           "--wide-csv", str(root / "wide.csv"), "--workers", "2", "--timeout", "10"]
                          + (["--no-sandbox"] if sandbox.works() else []))
    with open(root / "grades.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {"code": code, "rows": rows, "json": json.loads((root / "grades.json").read_text()),
            "out": out.getvalue(), "root": root,
            "log_growth": len(progress.read_events()) - log_before}


def _row(batch, student):
    found = [r for r in batch["rows"] if r["student"] == student]
    assert len(found) == 1, f"{student}: {found}"
    return found[0]


@pytest.mark.slow
def test_batch_completes_and_reports_every_notebook(batch):
    assert batch["code"] == 0
    students = {r["student"] for r in batch["rows"]}
    assert students == set(VARIANTS) | {"teacher", "corrupt", "holiday_photos"}
    with open(batch["root"] / "grades.csv", newline="") as fh:
        assert next(csv.reader(fh)) == ["student", "notebook", "exercise", "status", "mistake", "points", "max_points"]
    def text(v):
        return f"{v:g}" if isinstance(v, float) else (v or "")

    assert [{k: text(r[k]) for k in grade.COLUMNS} for r in batch["json"]] == \
        [{k: (r[k] or "") for k in grade.COLUMNS} for r in batch["rows"]]
    assert all(r["detail"] for r in batch["json"]), "every JSON row explains itself"


@pytest.mark.slow
def test_solution_scores_correct(batch):
    assert _row(batch, "teacher")["status"] == "correct"
    assert _row(batch, "solved")["status"] == "correct"


@pytest.mark.slow
def test_untouched_learner_notebook_scores_not_attempted(batch):
    assert _row(batch, "untouched")["status"] == "not_attempted"


@pytest.mark.slow
def test_wrong_answer_is_incorrect_with_the_named_mistake(batch):
    row = _row(batch, "wrong")
    assert (row["status"], row["mistake"]) == ("incorrect", "inverted_ratio")


@pytest.mark.slow
@pytest.mark.parametrize("student", ["deleted", "printed", "edited"])
def test_missing_or_edited_check_cell_is_not_attempted_never_correct(batch, student):
    row = _row(batch, student)
    assert (row["status"], row["mistake"]) == ("not_attempted", "no_check_cell")


@pytest.mark.slow
@pytest.mark.parametrize("student, mistake", [
    ("reference", "reference_answer"),
    ("syntax", "answer_not_defined"),
])
def test_cheats_and_breakage_are_incorrect(batch, student, mistake):
    row = _row(batch, student)
    assert (row["status"], row["mistake"]) == ("incorrect", mistake)
    assert row["points"] == "0"


@pytest.mark.slow
def test_patching_the_grading_code_in_the_kernel_changes_nothing(batch):
    # the kernel never judges: the identity answer is wrong, whatever the notebook patched
    row = _row(batch, "tampered")
    assert row["status"] == "incorrect" and row["mistake"] != "", row


@pytest.mark.slow
def test_points_and_wide_csv(batch):
    assert _row(batch, "solved")["points"] == "1" and _row(batch, "solved")["max_points"] == "1"
    assert _row(batch, "wrong")["points"] == "0"
    with open(batch["root"] / "wide.csv", newline="", encoding="utf-8") as fh:
        wide = list(csv.reader(fh))
    assert wide[0] == ["Student", "ID", "00_start_here (1 pts)", "Total (1 pts)"]
    by = {r[0]: r[2:] for r in wide[1:]}
    assert by["solved"] == ["1", "1"] and by["wrong"] == ["0", "0"]


@pytest.mark.slow
def test_forged_grade_output_does_not_count(batch):
    assert _row(batch, "forged")["status"] == "incorrect"


@pytest.mark.slow
def test_check_cell_with_extra_lines_is_graded_where_the_check_is(batch):
    # the line after the check rebinds the answer to None; the check itself saw the good one
    assert _row(batch, "extra_lines")["status"] == "correct"
    line = next(ln for ln in batch["out"].splitlines() if ln.startswith("extra_lines "))
    assert "BROKEN" not in line and "problem" not in line, line


@pytest.mark.slow
def test_the_kernel_imports_torch_and_the_graders_before_the_first_timed_cell(batch):
    assert _row(batch, "warmed")["status"] == "correct"
    line = next(ln for ln in batch["out"].splitlines() if ln.startswith("warmed "))
    assert "problem" not in line, line


@pytest.mark.slow
def test_endless_loop_is_interrupted_and_grading_goes_on(batch):
    assert _row(batch, "loop")["status"] == "correct"
    assert "loop" in batch["out"] and "timed out after 10 s" in batch["out"]


@pytest.mark.slow
@pytest.mark.parametrize("student, mistake", [
    ("crash", "kernel_died"),
    ("stubborn", "kernel_unresponsive"),
    ("corrupt", "corrupt_notebook"),
    ("holiday_photos", "unknown_lesson"),
])
def test_broken_notebooks_are_reported_as_errors(batch, student, mistake):
    row = _row(batch, student)
    assert (row["status"], row["mistake"]) == ("error", mistake)
    assert "BROKEN" in batch["out"]


@pytest.mark.slow
def test_summary_is_readable(batch):
    out = batch["out"]
    assert f"Graded {len(VARIANTS) + 3} notebooks" in out and "sandboxed" in out  # + teacher, corrupt, stranger
    assert "Per exercise:" in out and EX in out
    assert "inverted_ratio" in out
    assert "SyntaxError" in out  # the syntax error is listed under Problems


@pytest.mark.slow
def test_grading_writes_no_progress_events(batch):
    # the notebooks call check() several times; none of it may land in the grader's own log
    assert batch["log_growth"] == 0


def _lesson_pair(stem):
    sol, nb = build.SOLUTIONS / f"{stem}.ipynb", build.NOTEBOOKS / f"{stem}.ipynb"
    if not (sol.exists() and nb.exists()):
        pytest.skip(f"lesson {stem} is not in the course yet")
    return sol, nb


@pytest.mark.slow
def test_a_bigger_lesson_solution_correct_learner_not_attempted(tmp_path):
    sol, learner = _lesson_pair("01_tensors")
    (tmp_path / "sol").mkdir()
    (tmp_path / "learner").mkdir()
    (tmp_path / "sol" / sol.name).write_text(sol.read_text())
    (tmp_path / "learner" / learner.name).write_text(learner.read_text())
    reports = grade.grade([tmp_path], workers=2, timeout=120)
    by = {r.student: r for r in reports}
    assert not by["sol"].error and not by["learner"].error
    assert by["sol"].rows and all(r.status == "correct" for r in by["sol"].rows), \
        [(r.exercise, r.status, r.detail) for r in by["sol"].rows]
    assert all(r.status == "not_attempted" for r in by["learner"].rows), \
        [(r.exercise, r.status, r.detail) for r in by["learner"].rows]
    assert not by["sol"].problems, by["sol"].problems


# ----------------------------------------------------------------------------- unit tests


@pytest.mark.parametrize("source, found", [
    ("ex.f.check(f)", ("", "f", "f", "")),
    ("ex.f.check(f)  # my comment", ("", "f", "f", "")),
    ("x = 1\nex.f.check(f)\ny = 2", ("x = 1", "f", "f", "y = 2")),
    ("ex.f.check(g)", None),                      # checks something else
    ("ex.f.check(f, seed=3)", None),             # not the exact form
    ("print('ex.f.check(f)')", None),
    ("r = ex.f.check(f)", None),
    ("if True:\n    ex.f.check(f)", None),
    ("def broken(:\nex.f.check(f)", None),       # does not parse
    ("ex.other.check(f)", None),
])
def test_split_check_cell(source, found):
    assert grade.split_check_cell(source, {"f": "f"}) == found


def test_expected_checks_come_from_the_exercise_names():
    assert grade.expected_checks(LESSON) == {"celsius_to_fahrenheit": "celsius_to_fahrenheit"}


def test_lesson_and_student_from_paths(tmp_path):
    stems = ["00_start_here", "01_tensors"]
    assert grade.identify_lesson(Path("alice_01_tensors.ipynb"), None, stems) == "01_tensors"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('ex = exercises_for("00_start_here")')])
    assert grade.identify_lesson(Path("homework.ipynb"), nb, stems) == "00_start_here"
    assert grade.identify_lesson(Path("homework.ipynb"), None, stems) is None
    assert grade.student_of(Path("alice_01_tensors.ipynb"), "01_tensors", None) == "alice"
    (tmp_path / "bob" / "week1").mkdir(parents=True)
    p = tmp_path / "bob" / "week1" / "01_tensors.ipynb"
    assert grade.student_of(p, "01_tensors", tmp_path) == "bob"
    assert grade.student_of(p, "01_tensors", None) == "week1"


def test_find_notebooks_skips_checkpoints_and_duplicates(tmp_path):
    (tmp_path / "a" / ".ipynb_checkpoints").mkdir(parents=True)
    (tmp_path / "a" / "00_start_here.ipynb").write_text("{}")
    (tmp_path / "a" / ".ipynb_checkpoints" / "00_start_here-checkpoint.ipynb").write_text("{}")
    found = grade.find_notebooks([tmp_path, tmp_path / "a" / "00_start_here.ipynb"])
    assert [p.name for p, _ in found] == ["00_start_here.ipynb"]


def test_cli_usage_errors(tmp_path, capsys):
    assert grade.main([str(tmp_path / "missing")]) == 2
    assert grade.main([str(tmp_path)]) == 2  # no notebooks
    assert "no notebooks" in capsys.readouterr().err


def test_kernel_export_pickles_the_answer_or_says_why_not(tmp_path):
    """The kernel half only serializes; it judges nothing."""
    import pickle
    import sys
    import types

    main = types.ModuleType("__main__")
    main.f = lambda c: c * 9 / 5 + 32
    main.g = (x for x in [])  # generators cannot be pickled
    old = sys.modules["__main__"]
    sys.modules["__main__"] = main
    try:
        kernel.export(EX, "f", str(tmp_path / "f"))
        kernel.export(EX, "missing", str(tmp_path / "m"))
        kernel.export(EX, "g", str(tmp_path / "g"))
    finally:
        sys.modules["__main__"] = old
    data = (tmp_path / "f").read_bytes()
    assert data.startswith(b"PICKLE") and pickle.loads(data[6:])(100) == 212
    assert (tmp_path / "m").read_bytes() == b"MISSING"
    assert (tmp_path / "g").read_bytes().startswith(b"ERROR")


def test_kernel_export_pickles_a_torch_function_that_reads_classes(tmp_path):
    """cloudpickle took `torch.classes` for a submodule that a function using `torch` and
    `folder.classes` imported, and failed ("cannot pickle '_Classes' object"): a right ImageFolder
    answer of lessons 13, 14 or 16 was export_failed."""
    import pickle
    import sys
    import types

    import torch

    exec("import torch\ndef names(folder):\n    return torch.tensor(len(folder.classes)), folder.classes\n",
         vars(main := types.ModuleType("__main__")))
    old = sys.modules["__main__"]
    sys.modules["__main__"] = main
    try:
        kernel.export(EX, "names", str(tmp_path / "names"))
    finally:
        sys.modules["__main__"] = old
    data = (tmp_path / "names").read_bytes()
    assert data.startswith(b"PICKLE"), data[:200]
    assert "torch.classes" in sys.modules  # put back
    folder = types.SimpleNamespace(classes=["0", "1", "2"])
    count, classes = pickle.loads(data[6:])(folder)
    assert torch.equal(count, torch.tensor(3)) and classes == ["0", "1", "2"]


def test_judge_carries_an_incorrect_with_its_facts_and_keeps_namedtuples():
    # one voice: an Incorrect raised in the executor is rebuilt with its facts (the judge fills the
    # declared message) and with no text of its own; a case's namedtuple is rebuilt as one
    import collections

    import torch

    from course_utils.grading.spec import Incorrect
    from course_utils.instructor import judge

    inc = judge._rebuild(judge._exc_info(Incorrect("wrong_epoch", got="3", epoch=2)))
    assert (inc.mistake, inc.message, inc.facts) == ("wrong_epoch", None, {"got": "3", "epoch": "2"})
    assert judge._rebuild(judge._exc_info(Incorrect("other", "its own text"))).message == "its own text"
    B = collections.namedtuple("B", "x y")
    out = judge._substitute(B(torch.zeros(1), [torch.ones(1)]), [torch.full((1,), 2.0), torch.full((1,), 3.0)])
    assert type(out) is B and out.x.item() == 2.0 and out.y[0].item() == 3.0


def test_the_notebook_runner_starts_without_the_iri_parser_and_still_validates():
    """nbrun, started once per graded notebook, skips rfc3987_syntax's parser (1.1 s a start)."""
    probe = (
        "import sys, course_utils.instructor.nbrun, nbformat\n"
        "assert sys.modules['rfc3987_syntax'] is None\n"
        "nb = nbformat.read('solutions/00_start_here.ipynb', as_version=4)\n"
        "nbformat.validate(nb)\n"
        "nb.cells[0]['cell_type'] = 'nonsense'\n"
        "try:\n    nbformat.validate(nb)\nexcept nbformat.ValidationError:\n    print('rejected')\n"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "rejected"


HOST_PROBE = """
import contextlib, io, json, runpy, sys
sys.argv = ["course_utils", "grade", sys.argv[1], "--gradebook", sys.argv[2], "--workers", "1"] + sys.argv[3:]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        runpy.run_module("course_utils", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"rc": code, "out": out.getvalue(), "torch": "torch" in sys.modules,
                  "graders": sorted(m for m in sys.modules if m.startswith(("course_utils.grading",
                                                                           "course_utils.exercises"))),
                  "iri_parser_skipped": sys.modules.get("rfc3987_syntax", "absent") is None}))
"""


@pytest.mark.slow
def test_the_grade_command_itself_imports_neither_torch_nor_the_graders(tmp_path):
    """The host process of `grade` lists lessons and exercises from the generated index and stages
    the course from it (torch and every grader cost seconds at each start); only the judge and
    the sandboxes import them. Nor does it build nbformat's unused IRI parser."""
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / f"{LESSON}.ipynb").write_text((build.SOLUTIONS / f"{LESSON}.ipynb").read_text())
    argv = [sys.executable, "-c", HOST_PROBE, str(tmp_path / "alice"), str(tmp_path / "gb.sqlite")]
    if not sandbox.works():
        argv.append("--no-sandbox")
    got = subprocess.run(argv, cwd=build.ROOT, capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    report = json.loads(got.stdout.strip().splitlines()[-1])
    assert report["rc"] == 0 and f"{EX}" in report["out"] and "1/1 correct" in report["out"], report["out"]
    assert report["torch"] is False and report["graders"] == []
    assert report["iri_parser_skipped"] is True
