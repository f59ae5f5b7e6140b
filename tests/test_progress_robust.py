"""Progress readers survive any log: every malformed event is skipped and counted, every good
event is used, and a missing or unreadable file is a clear message with a non-zero exit."""

from __future__ import annotations

import json
import math
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course_utils import dashboard as dash
from course_utils import progress
from course_utils import progress_view as view
from course_utils import progress_cli
from course_utils.instructor import room

A, B = "99_demo.first", "99_demo.second"
IDS = [A, B]
GOOD = [
    {"ts": 1_700_000_000.0, "learner": "ann", "event": "check", "exercise": A, "status": "incorrect",
     "mistake": "wrong_dim"},
    {"ts": 1_700_000_001.0, "learner": "ann", "event": "hint", "exercise": A, "level": 1},
    {"ts": 1_700_000_002.0, "learner": "ann", "event": "check", "exercise": A, "status": "correct", "mistake": None},
    {"ts": 1_700_000_003.0, "learner": "ann", "event": "solution", "exercise": B},
    {"event": "check", "exercise": B, "status": "not_attempted"},  # old logs: no ts, no learner
]
# one of each kind of malformed line, each with the reason the reader gives
BAD = [
    ('{"ts": "yesterday", "learner": "ann", "event": "check", "exercise": "99_demo.first", "status": "correct"}',
     "bad timestamp"),
    ('{"ts": 1e400, "learner": "ann", "event": "check", "exercise": "99_demo.first", "status": "correct"}',
     "bad timestamp"),
    ('{"ts": NaN, "learner": "ann", "event": "check", "exercise": "99_demo.first", "status": "correct"}',
     "bad timestamp"),
    ('{"ts": -5, "learner": "ann", "event": "hint", "exercise": "99_demo.first"}', "bad timestamp"),
    ('{"ts": true, "learner": "ann", "event": "hint", "exercise": "99_demo.first"}', "bad timestamp"),
    ('{"ts": 1, "learner": 42, "event": "check", "exercise": "99_demo.first", "status": "correct"}',
     "bad learner name"),
    ('{"ts": 1, "learner": ["a"], "event": "hint", "exercise": "99_demo.first"}', "bad learner name"),
    (json.dumps({"ts": 1, "learner": "x" * 5000, "event": "hint", "exercise": A}), "line too long"),
    (json.dumps({"ts": 1, "learner": "y" * 300, "event": "hint", "exercise": A}), "bad learner name"),
    (json.dumps({"ts": 1, "event": "check", "exercise": "99_demo." + "z" * 300, "status": "correct"}),
     "bad or missing exercise id"),
    ('{"ts": 1, "event": "check", "exercise": "<script>alert(1)</script>", "status": "correct"}',
     "bad or missing exercise id"),
    ('{"ts": 1, "event": "check", "exercise": 7, "status": "correct"}', "bad or missing exercise id"),
    ('{"ts": 1, "event": "check", "status": "correct"}', "bad or missing exercise id"),
    ('{"ts": 1, "exercise": "99_demo.first", "status": "correct"}', "unknown or missing event"),
    ('{"ts": 1, "event": "teleport", "exercise": "99_demo.first"}', "unknown or missing event"),
    ('{"ts": 1, "event": ["check"], "exercise": "99_demo.first"}', "unknown or missing event"),
    ('{"ts": 1, "event": "check", "exercise": "99_demo.first"}', "bad or missing check status"),
    ('{"ts": 1, "event": "check", "exercise": "99_demo.first", "status": ["correct"]}',
     "bad or missing check status"),
    ('{"ts": 1, "event": "check", "exercise": "99_demo.first", "status": "incorrect", "mistake": {"a": 1}}',
     "bad mistake id"),
    ('{"ts": 1, "event": "hint", "exercise": "99_demo.first", "level": 1e300}', "bad hint level"),
    ("[1, 2, 3]", "not a JSON object"),
    ("null", "not a JSON object"),
    ("{not json", "not JSON (garbage or a half-written line)"),
    ("\ufffd\ufffd binary garbage", "not JSON (garbage or a half-written line)"),
    ("[" * 5000 + "]" * 5000, "line too long"),
    ('{"ts": 1, "event": "check", "exercise": "99_demo.first", "sta', "not JSON (garbage or a half-written line)"),
]


def _write(path, lines):
    path.write_bytes(b"\n".join(line.encode() if isinstance(line, str) else line for line in lines))
    return path


def _mixed_log(path):
    lines = [json.dumps(g) for g in GOOD] + [b for b, _ in BAD]
    lines.insert(3, b"\xff\xfe\x00 raw bytes")
    return _write(path, lines)


def test_every_malformed_kind_is_skipped_counted_and_named(tmp_path):
    log = progress.read_log(_mixed_log(tmp_path / "log.jsonl"))
    assert log.events == GOOD
    assert log.skipped == len(BAD) + 1
    for _, why in BAD:
        assert why in log.reasons, why
    assert sum(log.reasons.values()) == log.skipped
    assert log.skipped_note().startswith(f"{len(BAD) + 1} malformed lines skipped (")


@pytest.mark.parametrize("line,why", BAD)
def test_each_bad_line_alone(tmp_path, line, why):
    log = progress.read_log(_write(tmp_path / "one.jsonl", [json.dumps(GOOD[0]), line]))
    assert log.events == [GOOD[0]] and log.skipped == 1 and log.reasons == {why: 1}


def test_readers_render_every_good_event_and_say_how_many_they_skipped(tmp_path, capsys):
    path = _mixed_log(tmp_path / "ann.jsonl")
    n_bad = len(BAD) + 1
    # the room view
    s = room.room_summary([tmp_path], exercises=IDS)
    assert s.events == len(GOOD) and s.skipped == n_bad
    a = s.rows[0]
    assert (a.attempted, a.correct, a.hints) == (1, 1, 1)
    assert f"Note: {n_bad} malformed lines skipped" in s.text()
    assert "malformed lines skipped" in s._repr_html_() and s.to_dict()["skipped"] == n_bad
    # the CLI room view and show
    assert progress_cli.main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Room: 1 learner," in out and f"{n_bad} malformed lines skipped" in out and A in out
    assert progress_cli.main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{n_bad} malformed lines skipped" in out and "1 of" in out
    # the learner's summary and dashboard
    assert f"{n_bad} malformed lines skipped" in view.read(path, exercises=[(A, "99_demo", "first", "F")]).note
    board = dash.Dashboard(path, auto_refresh=False,
                           exercises=[(A, "99_demo", "first", "F"), (B, "99_demo", "second", "S")])
    assert board.lessons[0].exercises[0].status == "correct"
    assert f"{n_bad} malformed lines skipped" in board.status.value and "malformed" in board.text()


def test_watch_survives_a_log_that_turns_bad(tmp_path, monkeypatch, capsys):
    path = _write(tmp_path / "ann.jsonl", [json.dumps(GOOD[0])])
    ticks = iter(range(3))

    def fake_sleep(_):
        i = next(ticks)
        if i == 0:
            with open(path, "a") as fh:
                fh.write("\n" + BAD[0][0] + "\n{\"ts\": 1e400")
        else:
            raise KeyboardInterrupt

    monkeypatch.setattr(room.time, "sleep", fake_sleep)
    assert progress_cli.main(["summary", str(path), "--watch", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("Room: 1 learner") == 2 and "2 malformed lines skipped" in out


def test_missing_and_unreadable_logs_are_clear_errors(tmp_path, capsys, monkeypatch):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(progress.LogError, match="no progress log at"):
        progress.read_log(missing)
    assert progress_cli.main(["show", str(missing)]) == 2
    assert "no progress log at" in capsys.readouterr().err
    assert progress_cli.main(["show", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    monkeypatch.setenv("COURSE_PROGRESS_LOG", str(missing))
    assert progress_cli.main([]) == 2
    assert "nothing has been checked" in capsys.readouterr().err
    monkeypatch.setenv("COURSE_PROGRESS_LOG", "")
    assert progress_cli.main(["show"]) == 2
    assert "turned off" in capsys.readouterr().err
    # summary: a missing file among good ones is named, the rest is shown, exit non-zero
    good = _write(tmp_path / "bo.jsonl", [json.dumps(GOOD[0])])
    assert progress_cli.main(["summary", str(good), str(missing)]) == 1
    cap = capsys.readouterr()
    assert "Room: 1 learner" in cap.out and "nope.jsonl: no such file" in cap.err
    assert progress_cli.main(["summary", str(missing)]) == 2
    assert "no progress logs found" in capsys.readouterr().err
    # the learner's dashboard: no log yet is normal, an unreadable one is said
    board = dash.Dashboard(tmp_path, auto_refresh=False, exercises=[(A, "99_demo", "first", "F")])
    assert "is a folder" in board.status.value


# ---------------------------------------------------------------------- fuzzing

_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                     st.text(max_size=30), st.sampled_from(["check", "hint", "solution", A, "correct",
                                                            "incorrect", "not_attempted", "x" * 300]))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                       max_leaves=6)
_records = st.dictionaries(st.sampled_from(["ts", "learner", "event", "exercise", "status", "mistake", "level",
                                            "other"]), _values, max_size=8)
_lines = st.one_of(
    _records.map(lambda r: json.dumps(r, allow_nan=True)),
    st.text(alphabet=string.printable + "\u00e9\ufffd{}[]\":,", max_size=80),
    st.sampled_from([json.dumps(g) for g in GOOD]),
    st.sampled_from([b for b, _ in BAD]),
    st.sampled_from([json.dumps(g) for g in GOOD]).flatmap(lambda s: st.integers(0, len(s)).map(lambda n: s[:n])),
)


def _sane(ev):
    assert progress.event_problem(ev) is None
    assert isinstance(ev["exercise"], str) and len(ev["exercise"]) <= progress.MAX_NAME
    if "ts" in ev:
        assert math.isfinite(ev["ts"])


@settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_lines, max_size=25), raw=st.binary(max_size=40))
def test_fuzz_every_reader_survives_any_log(tmp_path_factory, lines, raw):
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "learner.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-8", errors="surrogatepass") + b"\n" + raw)
    log = progress.read_log(path)
    n_lines = sum(1 for ln in path.read_bytes().decode("utf-8", errors="replace").splitlines() if ln.strip())
    assert len(log.events) + log.skipped == n_lines
    for ev in log.events:
        _sane(ev)
    progress.exercise_progress(log.events)
    s = room.room_summary([folder], exercises=IDS)
    assert s.events == len(log.events) and s.skipped == log.skipped
    s.text(all_rows=True)
    s._repr_html_()
    json.dumps(s.to_dict(), allow_nan=False)
    s.write_csv(folder / "room.csv")
    view.read(path, exercises=[(A, "99_demo", "first", "F")]).text()
    lessons = view.collect(log.events, [(A, "99_demo", "first", "F")])
    view.render_html(lessons)
    view.render_text(lessons)


@settings(max_examples=300, deadline=None, database=None)
@given(rec=_records)
def test_fuzz_fold_ignores_what_the_validator_rejects(rec):
    """Folding a raw (unvalidated) event never raises; it counts only valid ones."""
    folded = progress.exercise_progress([rec])
    assert bool(folded) == (progress.event_problem(rec) is None)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(who=st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=300),
       mistake=st.one_of(st.none(), st.sampled_from(["wrong_dim", "wrong dtype", "off-by-1"])))
def test_every_event_the_course_writes_is_read_back(tmp_path_factory, monkeypatch, who, mistake):
    """Whatever COURSE_LEARNER holds (tabs, newlines, 300 characters), the writer's events pass
    the readers' schema: the validator never drops a real check."""
    log = tmp_path_factory.mktemp("w") / "log.jsonl"
    monkeypatch.setenv("COURSE_PROGRESS_LOG", str(log))
    monkeypatch.setenv("COURSE_LEARNER", who)
    progress.log_event("check", A, status="incorrect", mistake=mistake)
    progress.log_event("hint", A, level=2)
    progress.log_event("solution", A)
    read = progress.read_log(log)
    assert read.skipped == 0 and len(read.events) == 3
