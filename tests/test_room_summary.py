"""The room view: ``python -m course_utils progress summary FILES...``."""

from __future__ import annotations

import json
import time

import pytest

from course_utils import progress_cli
from course_utils.instructor import room

A, B, C = "99_demo.first", "99_demo.second", "99_demo.third"
IDS = [A, B, C]


def _log(path, learner, events, t0=1_000_000.0):
    lines = []
    for i, ev in enumerate(events):
        kind, ex, *rest = ev
        rec = {"ts": t0 + i, "learner": learner, "event": kind, "exercise": ex}
        if kind == "check":
            rec["status"], rec["mistake"] = rest[0], (rest[1] if len(rest) > 1 else None)
        lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def logs(tmp_path):
    _log(tmp_path / "ann.jsonl", "ann", [
        ("check", A, "incorrect", "wrong_dim"), ("check", A, "correct"),
        ("check", B, "incorrect", "wrong_dim"), ("check", B, "incorrect", "off_by_one"),
        ("hint", B), ("check", B, "incorrect", "wrong_dim"),
    ])
    _log(tmp_path / "bo.jsonl", "bo", [
        ("check", A, "correct"), ("check", B, "incorrect", "off_by_one"), ("solution", B),
    ])
    _log(tmp_path / "cy.jsonl", "cy", [
        ("check", A, "not_attempted"), ("check", A, "incorrect", "wrong_dim"), ("check", A, "incorrect", "wrong_dim"),
        ("check", A, "correct"), ("check", A, "correct"), ("check", B, "correct"),
    ])
    return tmp_path


def test_numbers_per_exercise(logs):
    s = room.room_summary([logs], exercises=IDS)
    assert s.learners == ["ann", "bo", "cy"]
    a, b, c = s.rows
    assert (a.attempted, a.correct, a.pass_rate) == (3, 3, 1.0)
    assert a.median_attempts == 2.0  # ann 2, bo 1, cy 5
    assert a.median_attempts_to_pass == 2.0  # ann 2, bo 1, cy 4
    assert a.mistakes == {"wrong_dim": 3}
    assert (b.attempted, b.correct) == (3, 1)
    assert b.pass_rate == pytest.approx(1 / 3)
    assert b.median_attempts == 1.0  # ann 3, bo 1, cy 1
    assert b.top_mistakes(1) == [("wrong_dim", 2)]
    assert (b.hints, b.solutions) == (1, 1)
    # ann: 3 checks without a pass; bo: viewed the solution without passing
    assert b.stuck == ["ann", "bo"]
    assert sorted(b.working + c.working + a.working) == ["ann", "bo", "cy"]
    assert (c.attempted, c.pass_rate, c.median_attempts) == (0, None, None)


def test_stuck_after_is_configurable(logs):
    assert room.room_summary([logs], IDS, stuck_after=4).rows[1].stuck == ["bo"]
    assert room.room_summary([logs], IDS, stuck_after=1).rows[0].stuck == []  # everyone passed A


def test_text_table_and_stuck_section(logs):
    s = room.room_summary([logs], exercises=IDS)
    text = s.text()
    assert "Room: 3 learners, 15 events" in text
    assert "Where people are stuck" in text and "99_demo.second: 2 stuck (ann, bo)" in text
    assert "most common mistake: wrong_dim (2×)" in text
    assert "1 exercise nobody has touched yet not shown" in text
    assert C in s.text(all_rows=True)
    assert "pass rate" in s._repr_html_()


def test_one_file_with_several_learners_and_name_clashes(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _log(tmp_path / "a" / "progress.jsonl", "jovyan", [("check", A, "correct")])
    _log(tmp_path / "b" / "progress.jsonl", "jovyan", [("check", A, "incorrect", "x")])
    shared = tmp_path / "shared.jsonl"
    _log(shared, "dee", [("check", A, "correct")])
    with open(shared, "a") as fh:
        fh.write('{"ts": 5, "learner": "eve", "event": "check", "exercise": "99_demo.first", "status": "correct"}\n')
        fh.write("not json at all\n{\"half\": \n")
    s = room.room_summary([tmp_path], exercises=IDS)
    assert len(s.learners) == 4 and "dee" in s.learners and "eve" in s.learners
    assert sum(name.startswith("jovyan (") for name in s.learners) == 2
    assert (s.rows[0].attempted, s.rows[0].correct) == (4, 3)


def test_since_keeps_only_recent_events(tmp_path):
    now = time.time()
    _log(tmp_path / "old.jsonl", "old", [("check", A, "correct")], t0=now - 7200)
    _log(tmp_path / "new.jsonl", "new", [("check", A, "incorrect", "x")], t0=now - 60)
    s = room.room_summary([tmp_path], IDS, since=now - 600)
    assert s.learners == ["new"] and s.rows[0].correct == 0


def test_unknown_exercises_are_listed_after_the_course(tmp_path):
    _log(tmp_path / "x.jsonl", "x", [("check", "42_future.thing", "correct")])
    s = room.room_summary([tmp_path], exercises=IDS)
    assert [r.exercise for r in s.rows] == IDS + ["42_future.thing"]


def test_synthetic_room_is_deterministic_and_plausible(tmp_path):
    ids = [f"99_demo.e{i}" for i in range(12)]
    files = room.synthetic_logs(tmp_path / "r1", 30, seed=3, exercises=ids, start=0.0)
    again = room.synthetic_logs(tmp_path / "r2", 30, seed=3, exercises=ids, start=0.0)
    assert len(files) == 30
    assert [f.read_text() for f in files] == [f.read_text() for f in again]
    t = time.perf_counter()
    s = room.room_summary([tmp_path / "r1"], exercises=ids)
    took = time.perf_counter() - t
    assert len(s.learners) == 30
    assert s.rows[0].attempted == 30  # everybody starts with the first exercise
    assert s.rows[0].attempted >= s.rows[-1].attempted
    assert any(r.stuck for r in s.rows) and any(r.mistakes for r in s.rows)
    assert took < 5, f"summarising 30 learners took {took:.2f} s"


def test_cli_writes_table_plot_csv_json(logs, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    code = progress_cli.main(["summary", str(logs / "ann.jsonl"), str(logs / "bo.jsonl"), str(logs / "cy.jsonl"),
                              "--plot", str(out / "room.png"), "--csv", str(out / "room.csv"),
                              "--json", str(out / "room.json")])
    assert code == 0
    text = capsys.readouterr().out
    assert "Room: 3 learners" in text and "99_demo.second" in text
    assert (out / "room.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "room.png").stat().st_size > 5000
    assert "99_demo.first" in (out / "room.csv").read_text()
    data = json.loads((out / "room.json").read_text())
    assert data["learners"] == ["ann", "bo", "cy"]
    by = {r["exercise"]: r for r in data["exercises"]}
    assert by["99_demo.first"]["pass_rate"] == 1.0 and by["99_demo.second"]["stuck"] == ["ann", "bo"]


def test_cli_without_logs_is_a_usage_error(tmp_path, capsys):
    assert progress_cli.main(["summary", str(tmp_path)]) == 2
    assert "no progress logs" in capsys.readouterr().err


def test_cli_show_prints_one_learners_progress(logs, capsys):
    assert progress_cli.main(["show", str(logs / "cy.jsonl")]) == 0
    out = capsys.readouterr().out
    # the same rendering as the dashboard's (course_utils.progress_view): by lesson, then exercise
    assert "99 · demo" in out and "✅ first" in out and "exercises correct" in out


def test_room_shows_the_predictions_the_room_got_wrong_at_the_first_try():
    """Prediction events appear in their own part of the room view (hardest first), never as
    exercises, and do not change which exercise a learner is working on."""
    from course_utils.instructor.room import summarize

    def ev(kind, ex, status=None):
        e = {"ts": 1.0, "event": kind, "exercise": ex}
        if status:
            e["status"] = status
        return e

    per_learner = {
        "ana": [ev("check", "01_tensors.normalize_rows", "incorrect"),
                ev("prediction", "01_tensors.broadcast_shape", "incorrect"),
                ev("prediction", "01_tensors.broadcast_shape", "correct"),
                ev("prediction", "01_tensors.int_div_dtype", "correct")],
        "bo": [ev("prediction", "01_tensors.broadcast_shape", "correct"),
               ev("prediction", "01_tensors.int_div_dtype", "not_attempted")],
    }
    room = summarize(per_learner, exercises=["01_tensors.normalize_rows"])
    assert room.predictions == {"01_tensors.broadcast_shape": (2, 1), "01_tensors.int_div_dtype": (1, 1)}
    assert [r.exercise for r in room.rows] == ["01_tensors.normalize_rows"]
    assert room.rows[0].working == ["ana"]
    text = room.text()
    assert "Predictions: 3 made, 67% right at the first try" in text
    assert text.index("01_tensors.broadcast_shape: 1 of 2") < text.index("01_tensors.int_div_dtype: 1 of 1")
