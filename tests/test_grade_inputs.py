"""What ``grade`` makes of hostile or odd *inputs* (issue 23): the files handed in, their names
and folders, and the exports an instructor opens in a spreadsheet or an LMS.

Most notebooks here are malformed or refused, so nothing runs and the tests are fast; where a
notebook would run, ``--no-sandbox`` is used (the sandbox is tested in
tests/test_hostile_submissions.py), except for the test of the sandbox's temp space.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from course_utils import build
from course_utils.instructor import grade, grade_run, gradebook, sandbox
from course_utils.instructor.grade_report import NotebookReport, Row, exercise_rows

LESSON = "00_start_here"
EX = f"{LESSON}.celsius_to_fahrenheit"
ROOT = grade.ROOT


def _nb_json(source: object = "x = 1", **cell: object) -> str:
    c = {"cell_type": "code", "id": "c1", "metadata": {}, "outputs": [], "execution_count": None, "source": source}
    c.update(cell)
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [c]})


BROKEN = _nb_json(5)  # a cell whose source is an int
CORRUPT = '{"cells": [ not json'  # broken in a way the grader always reported: nothing runs


def _grade(args: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = grade.main([*args, "--no-sandbox", "--workers", "1"])
    return code, out.getvalue()


def _csv(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _exports(tmp_path: Path) -> list[str]:
    return ["--csv", str(tmp_path / "g.csv"), "--json", str(tmp_path / "g.json"), "--wide-csv", str(tmp_path / "w.csv")]


# ----------------------------------------------------------------------------- malformed notebooks


MALFORMED = {
    "int_source": BROKEN,
    "int_in_source_list": _nb_json(["x = 1\n", 7]),
    "cell_type_int": _nb_json("x", cell_type=3),
    "cells_a_dict": json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": {"a": 1}}),
    "metadata_a_list": json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": [], "cells": []}),
    "not_a_dict": "[1, 2, 3]",
    "nbformat_string": json.dumps({"nbformat": "4", "cells": []}),
}


def test_malformed_notebooks_are_error_rows_and_every_export_is_written(tmp_path):
    """Before: a cell whose source is an int crashed the run (TypeError), no export was written."""
    subs = tmp_path / "subs"
    for name, text in MALFORMED.items():
        (subs / name).mkdir(parents=True)
        (subs / name / f"{LESSON}.ipynb").write_text(text)
    (subs / "latin1").mkdir()
    latin1 = _nb_json("s = 'caf\xe9'").replace("\\u00e9", "\xe9").encode("latin-1")  # not UTF-8
    (subs / "latin1" / f"{LESSON}.ipynb").write_bytes(latin1)
    code, out = _grade([str(subs), *_exports(tmp_path)])
    assert code == 0, out[-2000:]
    rows = {r["student"]: r for r in _rows(tmp_path / "g.csv")}
    assert set(rows) == set(MALFORMED) | {"latin1"}
    assert all((r["status"], r["mistake"]) == ("error", "corrupt_notebook") for r in rows.values()), rows
    assert len(json.loads((tmp_path / "g.json").read_text())) == len(rows)
    assert len(_csv(tmp_path / "w.csv")) == 1 + len(rows)
    # a rerun resumes: every notebook comes from the gradebook
    code, out = _grade([str(subs), *_exports(tmp_path)])
    assert code == 0 and out.count("from the gradebook") >= len(rows), out[-2000:]


def test_a_grader_failure_on_one_notebook_is_its_row_and_the_batch_goes_on(tmp_path, monkeypatch):
    """Before: an exception while grading one notebook ended the whole run without exports."""
    def fake_run(self, report, nb, lesson):
        if "bob" in report.path:
            raise RuntimeError("grader bug")
        exercise_rows(report, lesson, set(), {}, None, None)

    monkeypatch.setattr(grade_run.Grader, "_run_and_judge", fake_run)
    subs = tmp_path / "subs"
    for name in ("alice", "bob", "carol"):
        (subs / name).mkdir(parents=True)
        (subs / name / f"{LESSON}.ipynb").write_bytes((build.NOTEBOOKS / f"{LESSON}.ipynb").read_bytes())
    code, out = _grade([str(subs), *_exports(tmp_path)])
    assert code == 0, out[-2000:]
    rows = {r["student"]: r for r in _rows(tmp_path / "g.csv")}
    assert rows["bob"]["status"] == "error" and rows["bob"]["mistake"] == "grader_error"
    assert rows["alice"]["status"] == rows["carol"]["status"] == "not_attempted"
    assert "grader bug" in out


def test_a_notebook_of_a_million_tiny_objects_is_refused_unparsed(tmp_path, monkeypatch):
    """Before: 800,000 empty objects in 2.4 MB cost the grader's own, unsandboxed process 1 GB
    (and 160 s) in nbformat before any sandbox started; now they are counted, not parsed."""
    from course_utils.instructor import grade_parse

    nb = json.loads(_nb_json())
    nb["metadata"]["junk"] = [{} for _ in range(grade_parse.MAX_JSON_VALUES)]
    bomb = json.dumps(nb, separators=(",", ":"))
    subs = tmp_path / "subs"
    (subs / "mallory").mkdir(parents=True)
    (subs / "mallory" / f"{LESSON}.ipynb").write_text(bomb)

    def never(*a, **k):
        raise AssertionError("parsed")

    monkeypatch.setattr(grade_parse.nbformat, "reads", never)
    monkeypatch.setattr(grade_run.Grader, "_run_and_judge", never)
    code, out = _grade([str(subs), *_exports(tmp_path)])
    assert code == 0, out
    row = _rows(tmp_path / "g.csv")[0]
    assert (row["student"], row["status"], row["mistake"]) == ("mallory", "error", "corrupt_notebook")
    assert "too complex to read (more than 100,000 JSON values, the limit)" in out, out


def test_the_courses_notebooks_stay_far_below_the_json_limit():
    from course_utils.instructor import grade_parse

    for nb in [*build.NOTEBOOKS.glob("*.ipynb"), *build.SOLUTIONS.glob("*.ipynb")]:
        assert grade_parse.json_values(nb.read_bytes()) < grade_parse.MAX_JSON_VALUES / 20, nb
    assert grade_parse.json_values(b'{"a": [1, "b,{[", {}], "c\\"": null}') == 7  # strings are text


def _alias_bomb(levels: int = 9) -> str:
    lines = ["# ---", "# jupyter:", "#   a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"#   a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join([*lines, "# ---", "", "# %%", "x = 1", ""])


def test_a_script_whose_header_expands_is_refused_unparsed(tmp_path, monkeypatch):
    """Before: a jupytext script whose YAML header nests aliases nine levels deep (10**9 items from
    1 kB) hung the grader's own process (killed after 60 s); now the header is read as events
    and an alias refuses it, as does a script of more lines than the limit."""
    from course_utils.instructor import grade_parse

    scripts = []  # a script is graded when named (a folder's walk takes notebooks only)
    for student, text in [("mallory", _alias_bomb()), ("trudy", "x = 1\n\n" * (grade_parse.MAX_SCRIPT_LINES // 2 + 1))]:
        scripts.append(tmp_path / f"{student}_{LESSON}.py")
        scripts[-1].write_text(text)

    def never(*a, **k):
        raise AssertionError("parsed")

    monkeypatch.setattr(grade_run.Grader, "_run_and_judge", never)
    code, out = _grade([*map(str, scripts), *_exports(tmp_path)])
    assert code == 0, out
    rows = {r["student"]: (r["status"], r["mistake"]) for r in _rows(tmp_path / "g.csv")}
    assert rows == {"mallory": ("error", "corrupt_notebook"), "trudy": ("error", "corrupt_notebook")}, rows
    assert "repeats a YAML anchor" in out and "more than 10,000 lines, the limit" in out, out


def test_the_courses_scripts_pass_the_script_checks_with_room():
    from course_utils.instructor import grade_parse

    for script in build.SOLUTIONS.glob("[0-9][0-9]_*.py"):
        text = script.read_text(encoding="utf-8")
        grade_parse.check_script(text)
        assert len(text.splitlines()) < grade_parse.MAX_SCRIPT_LINES / 5, script
    header = "#!/usr/bin/env python\n# ---\n# jupyter:\n#   kernelspec:\n#     name: python3\n# ---\n\n# %%\nx = 1\n"
    grade_parse.check_script(header)  # a plain header is read
    assert grade_parse._yaml_header(header.splitlines()) == "jupyter:\n  kernelspec:\n    name: python3"
    with pytest.raises(ValueError, match="alias"):
        grade_parse.check_script(_alias_bomb(2))


def test_a_deep_or_long_script_is_refused_before_yaml_reads_it():
    """PyYAML's time grows with the square of the nesting: a review's 100 kB header of 50,000
    `[` kept `grade` busy past SIGTERM and SIGINT (8,000 took 51 s)."""
    import time

    from course_utils.instructor import grade_parse

    for text in ["# ---\n# jupyter:\n#   a: " + "[" * 50_000 + "\n# ---\n",
                 "# ---\n# jupyter:\n#   a: " + "x" * 20_000 + "\n# ---\n",
                 "# ---\n# jupyter:\n" + "".join("#" + "  " * i + f" k{i}:\n" for i in range(1, 40)) + "# ---\n",
                 "x = 1  " + "#" * (grade_parse.MAX_SCRIPT_BYTES + 1)]:
        start = time.perf_counter()
        with pytest.raises(ValueError, match="too long|too deeply"):
            grade_parse.check_script(text)
        assert time.perf_counter() - start < 1.0


# ----------------------------------------------------------------------------- not regular files


def test_a_symlink_to_a_secret_is_refused_unread(tmp_path):
    """Before: the grader followed the link and put the file's first bytes in its output."""
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$SECRETHASHxyz:19000:0:99999:7:::\n")
    subs = tmp_path / "subs"
    (subs / "eve").mkdir(parents=True)
    (subs / "eve" / f"{LESSON}.ipynb").symlink_to(secret)
    code, out = _grade([str(subs), *_exports(tmp_path), "--gradebook", str(tmp_path / "g.sqlite")])
    assert code == 0, out
    for f in ("g.csv", "g.json", "w.csv", "g.sqlite"):
        assert b"SECRETHASH" not in (tmp_path / f).read_bytes(), f
    assert "SECRETHASH" not in out
    row = _rows(tmp_path / "g.csv")[0]
    assert (row["student"], row["status"], row["mistake"]) == ("eve", "error", "not_regular_file")
    assert "not a regular file" in out


def test_a_symlink_to_the_solution_scores_nothing(tmp_path):
    """Before: a link to the instructor's solution notebook scored full marks."""
    subs = tmp_path / "subs"
    (subs / "frank").mkdir(parents=True)
    (subs / "frank" / f"{LESSON}.ipynb").symlink_to(build.SOLUTIONS / f"{LESSON}.ipynb")
    code, out = _grade([str(subs), *_exports(tmp_path)])
    assert code == 0, out
    row = _rows(tmp_path / "g.csv")[0]
    assert (row["status"], row["mistake"], row["points"]) == ("error", "not_regular_file", "0")
    assert _csv(tmp_path / "w.csv")[1:] == []  # refused: no hand-in, in no export's points


def test_a_fifo_named_like_a_notebook_does_not_hang_the_grader(tmp_path):
    """Before: `grade` blocked forever opening the FIFO (SIGTERM and SIGINT did not end it)."""
    subs = tmp_path / "subs"
    (subs / "gina").mkdir(parents=True)
    os.mkfifo(subs / "gina" / f"{LESSON}.ipynb")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "course_utils", "grade", str(subs), "--csv", str(tmp_path / "g.csv"),
                           "--no-sandbox"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = _rows(tmp_path / "g.csv")[0]
    assert (row["student"], row["mistake"]) == ("gina", "not_regular_file")


def test_a_linked_student_folder_is_a_row_not_silence(tmp_path):
    """Before: `rglob` does not enter a linked folder, so a student folder that is a symlink (or
    a linked week folder in one, or a dangling link) was skipped without a word or a row."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / f"{LESSON}.ipynb").write_text(CORRUPT)
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    (subs / "alice" / f"{LESSON}.ipynb").write_text(CORRUPT)
    (subs / "mallory").symlink_to(elsewhere, target_is_directory=True)
    (subs / "bob").mkdir()
    (subs / "bob" / "week1").symlink_to(elsewhere, target_is_directory=True)
    (subs / "dan").symlink_to(tmp_path / "nowhere")
    (subs / ".eve").symlink_to(elsewhere, target_is_directory=True)
    code, out = _grade([str(subs), *_exports(tmp_path)])
    assert code == 0, out
    rows = {r["student"]: r for r in _rows(tmp_path / "g.csv")}
    assert set(rows) == {"alice", "mallory", "bob", "dan"}, out
    assert rows["alice"]["mistake"] == "corrupt_notebook"
    for who in ("mallory", "bob", "dan"):
        assert (rows[who]["status"], rows[who]["mistake"], rows[who]["points"]) == ("error", "not_regular_file", "0")
    assert out.count("not a regular folder") >= 3, out
    assert "skipped" in out and ".eve" in out  # a hidden one is named, as hidden folders are


def test_read_bytes_refuses_devices_and_links_and_reads_regular_files(tmp_path):
    from course_utils.instructor import grade_parse

    (tmp_path / "a.ipynb").write_bytes(b"{}")
    (tmp_path / "link.ipynb").symlink_to(tmp_path / "a.ipynb")
    assert grade_parse.read_bytes(tmp_path / "a.ipynb") == b"{}"
    for p in (Path("/dev/zero"), tmp_path / "link.ipynb", tmp_path):
        with pytest.raises(grade_parse.NotRegularFile):
            grade_parse.read_bytes(p)
    with pytest.raises(ValueError, match="larger than"):
        grade_parse.read_bytes(tmp_path / "a.ipynb", limit=1)


# ----------------------------------------------------------------------------- identity


def test_the_folder_names_the_student_and_a_file_naming_another_is_refused(tmp_path):
    """Before: `mallory/alice_00_start_here.ipynb` counted for alice (the file name beat the
    folder), and `bob/00_start_here-Copy1.ipynb` was graded as a student named Copy1."""
    subs = tmp_path / "subs"
    for rel in ("alice/00_start_here.ipynb", "mallory/alice_00_start_here.ipynb", "bob/00_start_here-Copy1.ipynb",
                "copy1/00_start_here.ipynb"):  # a student whose folder reads like Jupyter's copy suffix
        (subs / rel).parent.mkdir(parents=True, exist_ok=True)
        (subs / rel).write_text(CORRUPT)
    code, out = _grade([str(subs), *_exports(tmp_path)])
    assert code == 0, out
    rows = {r["notebook"].split("/subs/", 1)[1]: r for r in _rows(tmp_path / "g.csv")}
    mal = rows["mallory/alice_00_start_here.ipynb"]
    assert (mal["student"], mal["status"], mal["mistake"]) == ("mallory", "error", "names_another_student")
    assert rows["alice/00_start_here.ipynb"]["student"] == "alice"
    assert rows["bob/00_start_here-Copy1.ipynb"]["student"] == "bob"
    assert "REFUSED" in out and "mallory/alice_00_start_here.ipynb" in out
    assert "DUPLICATES" not in out
    wide = {r[0]: r for r in _csv(tmp_path / "w.csv")[1:]}
    assert set(wide) == {"alice", "bob", "copy1"}  # mallory handed in nothing that counts


def _report(student: str, lesson: str, points: list[float], path: str | None = None) -> NotebookReport:
    rep = NotebookReport(path or f"{student}/{lesson}.ipynb", student, lesson)
    for i, p in enumerate(points):
        rep.rows.append(Row(student, rep.shown, f"{lesson}.ex{i}", "correct" if p else "incorrect", "", "", p, 1.0))
    return rep


def test_duplicates_are_never_merged_into_the_better_score(tmp_path):
    """Before: two notebooks of one student for one lesson: the wide CSV took the better one."""
    reports = [_report("dana", LESSON, [1.0]), _report("dana", LESSON, [0.0], f"dana_{LESSON}.ipynb"),
               _report("eli", LESSON, [1.0])]
    gradebook.write_wide_csv(reports, tmp_path / "w.csv", [LESSON])
    by = {r[0]: r[1:] for r in _csv(tmp_path / "w.csv")[1:]}
    assert by["dana"][-2:] == ["", ""] and by["eli"][-2:] == ["1", "1"]
    assert "DUPLICATES" in grade.summary_text(reports) and "blank in the wide CSV" in grade.summary_text(reports)


def test_resume_keys_on_the_resolved_path(tmp_path, monkeypatch):
    """Before: grading `subs` and then `/abs/.../subs` graded everything again."""
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    (subs / "alice" / f"{LESSON}.ipynb").write_text(CORRUPT)
    monkeypatch.chdir(tmp_path)
    book = ["--gradebook", str(tmp_path / "g.sqlite")]
    assert _grade(["subs", *book])[0] == 0
    code, out = _grade([str(subs.resolve()), *book])
    assert code == 0 and "from the gradebook" in out, out
    assert sqlite3.connect(tmp_path / "g.sqlite").execute("SELECT COUNT(*) FROM notebooks").fetchone()[0] == 1


# ----------------------------------------------------------------------------- names in output and exports


FORMULAS = ['=HYPERLINK("evil.example","x")', "+1+1", "-2+3", "@SUM(A1)"]


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(tmp_path):
    """Before: student names starting with = + - @ were written verbatim (OWASP CSV injection)."""
    subs = tmp_path / "subs"
    for name in FORMULAS:
        (subs / name).mkdir(parents=True)
        (subs / name / f"{LESSON}.ipynb").write_text(CORRUPT)
    (subs / f"\tTAB_{LESSON}.ipynb").write_text(CORRUPT)
    code, out = _grade([str(subs), *_exports(tmp_path)])
    assert code == 0, out
    for f in ("g.csv", "w.csv"):
        cells = [c for row in _csv(tmp_path / f)[1:] for c in row]
        assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")], (f, cells)
        students = sorted(row[0] for row in _csv(tmp_path / f)[1:])
        assert students == sorted({"'" + n for n in FORMULAS} | {"\\tTAB"}), students  # the tab is escaped
    assert gradebook.safe("=1") == "'=1" and gradebook.safe("alice") == "alice" and gradebook.safe("") == ""


def test_a_newline_in_a_file_name_prints_no_fake_line_and_hidden_folders_are_named(tmp_path):
    """Before: a file name with a newline printed a fake "graded ... correct" line, and a student
    folder starting with `.` was skipped without a word."""
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / f"x\n  graded fake [bob] in 1.0 s: 1 of 1 correct\n_{LESSON}.ipynb").write_text(CORRUPT)
    (subs / ".carol").mkdir()
    (subs / ".carol" / f"{LESSON}.ipynb").write_text(CORRUPT)
    code, out = _grade([str(subs), *_exports(tmp_path)])
    assert code == 0, out
    assert not [ln for ln in out.splitlines() if ln.lstrip().startswith("graded fake")], out
    assert "x\\n  graded fake" in out
    assert "skipped" in out and ".carol" in out


def test_bidirectional_controls_in_a_name_are_escaped():
    """A student folder `mallory\\u202e` showed what followed it reversed (hostile review)."""
    from course_utils.instructor.grade_report import shown

    assert shown("mallory\u202e8/8 \u2066x\u2069\u200f") == "mallory\\u202e8/8 \\u2066x\\u2069\\u200f"
    assert shown("Zoë_李") == "Zoë_李"
    # every invisible format character (Unicode Cf), not a list: a zero-width space made a second
    # `cosm00` row (a review, 2026-11-29)
    assert shown("cos\u200bm00") == "cos\\u200bm00" and shown("a\ufeffb\u2060c") == "a\\ufeffb\\u2060c"


# ----------------------------------------------------------------------------- the LMS export


def test_the_lms_export_leaves_missing_work_blank(tmp_path):
    """Before: a lesson not handed in was written as 0."""
    reports = [_report("alice", LESSON, [1.0]), _report("alice", "01_tensors", [1.0, 0.0]),
               _report("bob", LESSON, [1.0])]
    gradebook.write_wide_csv(reports, tmp_path / "w.csv", [LESSON, "01_tensors"])
    table = _csv(tmp_path / "w.csv")
    by = {r[0]: r for r in table[1:]}
    assert table[0][-3:] == [f"{LESSON} (1 pts)", "01_tensors (2 pts)", "Total (3 pts)"]
    assert by["alice"][-3:] == ["1", "1", "2"]
    assert by["bob"][-3:] == ["1", "", "1"]


def test_the_lms_export_has_the_roster_ids_and_every_roster_student(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,email\nbob,S002,b@x\nalice,S001,a@x\nzoe,S026,z@x\n")
    reports = [_report("alice", LESSON, [1.0]), _report("bob", LESSON, [0.0]), _report("walk_in", LESSON, [1.0])]
    names = gradebook.read_roster(roster)
    assert names == {"bob": "S002", "alice": "S001", "zoe": "S026"}
    table = gradebook.lms_table(reports, [LESSON], names)
    assert table == [["Student", "ID", f"{LESSON} (1 pts)", "Total (1 pts)"],
                     ["bob", "S002", "0", "0"], ["alice", "S001", "1", "1"], ["zoe", "S026", "", ""],
                     ["walk_in", "", "1", "1"]]
    (tmp_path / "bad.csv").write_text("name,number\nx,1\n")
    with pytest.raises(ValueError, match="student and id"):
        gradebook.read_roster(tmp_path / "bad.csv")


# Canvas: a gradebook CSV import identifies students by the columns its own export starts with
# (Student, ID, SIS User ID, SIS Login ID, Section), then one column per assignment; its export's
# second row is "Points Possible", and "Final Points" is one of its read-only total columns
# (ignored on import). Moodle (grade/import/csv): one column is mapped to the user's id, idnumber,
# email or username ("ID number" in its own export), every other column to a grade item or ignored;
# a row whose identifier is blank is skipped.
CANVAS_HEAD = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def test_canvas_and_moodle_column_conventions(tmp_path):
    reports = [_report("alice", LESSON, [1.0]), _report("alice", "01_tensors", [1.0, 1.0]),
               _report("bob", LESSON, [0.0])]
    roster = {"alice": "S001", "bob": "S002"}
    canvas = gradebook.lms_table(reports, [LESSON, "01_tensors"], roster, "canvas")
    assert canvas[0] == CANVAS_HEAD + [LESSON, "01_tensors", "Final Points"]
    assert canvas[1] == ["Points Possible", "", "", "", "", "1", "2", "3"]
    assert canvas[2] == ["alice", "", "S001", "", "", "1", "2", "3"]
    assert canvas[3] == ["bob", "", "S002", "", "", "0", "", "0"]
    moodle = gradebook.lms_table(reports, [LESSON, "01_tensors"], roster, "moodle")
    assert moodle[0] == ["Student", "ID number", LESSON, "01_tensors", "Course total"]
    assert [r[1] for r in moodle[1:]] == ["S001", "S002"]  # every row is a student, none blank
    assert moodle[2] == ["bob", "S002", "0", "", "0"]
    # through the command line
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    (subs / "alice" / f"{LESSON}.ipynb").write_text(CORRUPT)
    (tmp_path / "roster.csv").write_text("student,id\nalice,S001\nbob,S002\n")
    code, out = _grade([str(subs), "--wide-csv", str(tmp_path / "c.csv"), "--roster", str(tmp_path / "roster.csv"),
                        "--lms", "canvas", "--gradebook", str(tmp_path / "g.sqlite")])
    assert code == 0, out
    assert _csv(tmp_path / "c.csv") == [CANVAS_HEAD + [LESSON, "Final Points"],
                                        ["Points Possible", "", "", "", "", "1", "1"],
                                        ["alice", "", "S001", "", "", "0", "0"], ["bob", "", "S002", "", "", "", ""]]


# ----------------------------------------------------------------------------- the sandbox's temp space


@pytest.mark.skipif(sandbox.works() is not None, reason=f"no bubblewrap sandbox here: {sandbox.works()}")
def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_the_judges_temp_folders_go_with_the_grader(tmp_path, monkeypatch):
    """Before: the judge (and, unsandboxed, each run) used the system's temp folder and ends
    killed, so the folders checks make with mkdtemp and remove at exit stayed: one
    `course-l13-*` per `grade` of a lesson-13 notebook, 88 such folders on a CI machine."""
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    grader = grade_run.Grader(1, sandboxed=False)
    try:
        judge = grader._judge()
        scratch = Path(_environ(judge.pid)["TMPDIR"])
        assert scratch.is_dir() and grader.tmp in scratch.parents, scratch
        (scratch / "course-l13-left").mkdir()  # what a killed judge leaves
        started: list[dict] = []
        monkeypatch.setattr(grade_run.subprocess, "Popen", lambda *a, **k: started.append(k["env"]))
        grader._notebook_proc(tmp_path, {"lesson": LESSON, "notebook": "x"}, None)  # an unsandboxed run
        assert started[0]["TMPDIR"] == str(scratch)
        monkeypatch.undo()
    finally:
        grader.close()
    assert not scratch.exists() and not grader.tmp.exists()
    assert [p.name for p in tmp_path.iterdir()] == [], list(tmp_path.iterdir())


def test_all_temp_space_in_a_sandbox_stays_within_its_limit(tmp_path):
    """Every folder a sandbox can write is RAM-backed (tmpfs): together they hold at most
    ``Limits.tmp_size``. Before: /tmp, /dev/shm and each masked home had the full size each
    (with the default 1 GB: 2 GB and more beyond the memory limit)."""
    limits = sandbox.Limits(tmp_size=48 * 1024**2)
    probe = (
        "import os, errno, sys\n"
        "total = 0\n"
        "block = b'x' * (1 << 20)\n"
        "for d in ['/tmp', '/dev/shm', '/var/tmp', os.path.expanduser('~'), '/root', '/home', '/run', '/course',\n"
        "          '/submission', '/usr', '/etc', '/', " + repr(str(Path.home())) + "]:\n"
        "    try:\n"
        "        p = os.path.join(d, 'fill-%d' % total)\n"
        "        with open(p, 'wb', buffering=0) as fh:\n"
        "            for _ in range(4096):\n"
        "                total += fh.write(block)\n"
        "    except OSError:\n"
        "        pass\n"
        "print(total)\n")
    proc = sandbox.popen([sys.executable, "-c", probe], course=sandbox.stage_course(tmp_path / "course"),
                         inputs=None, limits=limits, uid=sandbox.UidPool(1).take())
    out, _ = proc.communicate(timeout=120)
    written = int(out.decode().split()[-1])
    assert 16 * 1024**2 <= written <= limits.tmp_size, written / 1024**2


# ----------------------------------------------------------------------------- the sandbox's memory limit


def _fake_python(tmp_path: Path, status: str, rc: int = 0) -> str:
    exe = tmp_path / "python"
    exe.write_text(f"#!/bin/sh\nprintf '%s\\n' '{status}'\nexit {rc}\n")
    exe.chmod(0o755)
    return str(exe)


def test_the_memory_limit_grows_by_what_a_cuda_build_of_torch_maps(tmp_path):
    """A CUDA build of torch maps about 3.5 GB of address space when imported (2.14.1+cu130 with
    torchvision: VmPeak 3.48 GB): under a flat 2 GB limit every notebook graded with the default
    Linux wheel failed at `import torch` and scored nothing. The limit adds what the build maps
    beyond a CPU build; a CPU build, or a probe that fails, adds nothing."""
    cuda = _fake_python(tmp_path, "Name:\tpython\nVmPeak:\t 3650000 kB\nVmRSS:\t  680000 kB")
    assert sandbox.library_overhead(cuda) == 3650000 * 1024 - sandbox.CPU_BUILD_IMPORT
    (tmp_path / "cpu").mkdir()
    assert sandbox.library_overhead(_fake_python(tmp_path / "cpu", "VmPeak:\t  640000 kB")) == 0
    (tmp_path / "broken").mkdir()
    assert sandbox.library_overhead(_fake_python(tmp_path / "broken", "VmPeak:\t 9000000 kB", rc=1)) == 0
    limits = sandbox.Limits(memory=2 * 1024**3, libraries=3 * 1024**3)
    assert limits.address_space() == 5 * 1024**3
    assert limits.describe_memory() == "2 GB (+ 3 GB of address space for torch's libraries)"
    import torch

    if torch.version.cuda is None:  # this Python's own torch: the CPU build adds nothing
        assert sandbox.library_overhead() == 0
        assert sandbox.Limits().describe_memory() == "2 GB"


def test_the_library_measurement_is_made_once_per_installation(tmp_path, monkeypatch):
    """Measuring imports torch in a fresh interpreter (3-8 s, on every `grade` command before): it
    is kept in the user's cache folder under a key of the interpreter and torch's installation."""
    measured = []
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(sandbox, "_measure_overhead", lambda python: measured.append(python) or 123)
    key = ["torch at A"]
    monkeypatch.setattr(sandbox, "_overhead_key", lambda python: key[0])
    for _ in range(3):
        sandbox._library_overhead.cache_clear()  # a new `grade` command
        assert sandbox.library_overhead("python") == 123
    assert len(measured) == 1
    assert (tmp_path / "pytorch_course" / "library_overhead.json").is_file()
    key[0] = "torch at B"  # torch reinstalled: measured again
    sandbox._library_overhead.cache_clear()
    assert sandbox.library_overhead("python") == 123 and len(measured) == 2
    (tmp_path / "pytorch_course" / "library_overhead.json").write_text("not json")
    sandbox._library_overhead.cache_clear()
    assert sandbox.library_overhead("python") == 123 and len(measured) == 3
    sandbox._library_overhead.cache_clear()
    monkeypatch.undo()
    assert sandbox._overhead_key("/some/other/python") is None  # only the running interpreter is cached
    assert "torch:" in sandbox._overhead_key(sys.executable)


@pytest.mark.skipif(sandbox.works() is not None, reason=f"no bubblewrap sandbox here: {sandbox.works()}")
def test_a_sandboxed_process_gets_memory_plus_libraries_and_no_more(tmp_path):
    limits = sandbox.Limits(memory=256 * 1024**2, libraries=64 * 1024**2)
    probe = ("import resource\nprint(resource.getrlimit(resource.RLIMIT_AS)[0])\n"
             "try:\n    b = bytearray(400 * 1024**2)\n    print('allocated')\n"
             "except MemoryError:\n    print('refused')\n")
    proc = sandbox.popen([sys.executable, "-c", probe], course=sandbox.stage_course(tmp_path / "course"),
                         inputs=None, limits=limits, uid=sandbox.UidPool(1).take())
    out, _ = proc.communicate(timeout=120)
    assert out.decode().split() == [str(320 * 1024**2), "refused"]
