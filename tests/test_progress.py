from __future__ import annotations

import json

from course_utils import progress, progress_view


def test_log_and_read_roundtrip(tmp_path, monkeypatch):
    log = tmp_path / "sub" / "log.jsonl"
    monkeypatch.setenv("COURSE_PROGRESS_LOG", str(log))
    progress.log_event("check", "01_tensors.a", status="incorrect", mistake="wrong_dim")
    progress.log_event("check", "01_tensors.a", status="correct", mistake=None)
    progress.log_event("hint", "01_tensors.b", level=1)
    events = progress.read_events()
    assert [e["event"] for e in events] == ["check", "check", "hint"]
    folded = progress.exercise_progress(events)
    assert folded["01_tensors.a"].status == "correct" and folded["01_tensors.a"].attempts == 2
    assert folded["01_tensors.a"].mistakes == {"wrong_dim": 1}
    assert folded["01_tensors.b"].hints == 1 and folded["01_tensors.b"].status == "not_attempted"


def test_corrupt_and_half_written_lines_are_skipped(tmp_path):
    log = tmp_path / "log.jsonl"
    good = json.dumps({"event": "check", "exercise": "x.y", "status": "correct"})
    log.write_bytes(b"\n".join([
        good.encode(), b"{not json", b"[1, 2]", b'{"event": 3, "exercise": "x"}', b"\xff\xfe garbage",
        good.encode(), b'{"event": "check", "exercise": "x.z", "sta',  # half-written last line
    ]))
    events = progress.read_events(log)
    assert len(events) == 2 and all(e["exercise"] == "x.y" for e in events)


def test_logging_can_be_turned_off_and_never_raises(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_PROGRESS_LOG", "")
    assert progress.log_path() is None
    progress.log_event("check", "a.b")  # no file, no error
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("COURSE_PROGRESS_LOG", str(blocker / "cannot" / "log.jsonl"))
    progress.log_event("check", "a.b")  # unwritable: silently skipped
    assert progress.read_events() == []


def test_summary_lists_every_exercise_once(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"event": "check", "exercise": "00_start_here.celsius_to_fahrenheit",
                               "status": "correct"}) + "\n")
    s = progress_view.read(log)
    ids = [e.id for les in s.lessons for e in les.exercises]
    assert len(ids) == len(set(ids)) and "00_start_here.celsius_to_fahrenheit" in ids
    assert progress_view.totals(s.lessons)["correct"] == 1
    assert "1 of" in s.text() and "<table" in s._repr_html_()


def test_checks_of_an_untouched_stub_are_not_attempts(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(json.dumps({"event": "check", "exercise": "a.b", "status": st})
                             for st in ["not_attempted", "not_attempted", "incorrect", "correct"]) + "\n")
    p = progress.exercise_progress(progress.read_events(log))["a.b"]
    assert p.attempts == 2 and p.status == "correct"


def test_a_log_from_before_the_renumbering_reads_with_todays_ids(tmp_path):
    """Lessons 06, 07 and 09 became 10, 09 and 12, and 10 was split into 10 and 11: a learner's older
    log keeps every attempt."""
    log = tmp_path / "p.jsonl"
    old = [("check", "07_persistence.save_checkpoint", "correct"),
           ("check", "09_capstone.confusion_matrix", "incorrect"),
           ("check", "06_gpu_amp_ddp.to_device", "correct"),
           ("check", "08_convolutions.conv_output_size", "correct"),
           # lesson 10_gpu_amp_ddp was split: the renames chain (06 -> 10_gpu_amp_ddp -> 10/11)
           ("check", "06_gpu_amp_ddp.shard_indices", "incorrect"),
           ("check", "10_gpu_amp_ddp.data_parallel_grads", "correct"),
           ("check", "10_gpu_amp_ddp.amp_train_step", "correct"),
           ("prediction", "06_gpu_amp_ddp.bf16_small_step", "correct")]
    log.write_text("".join(json.dumps({"ts": 1.0, "learner": "a", "event": e, "exercise": x, "status": s})
                           + "\n" for e, x, s in old))
    ids = [ev["exercise"] for ev in progress.read_events(log)]
    assert ids == ["09_persistence.save_checkpoint", "12_capstone.confusion_matrix",
                   "10_performance.to_device", "08_convolutions.conv_output_size",
                   "11_distributed.shard_indices", "11_distributed.data_parallel_grads",
                   "10_performance.amp_train_step", "10_performance.bf16_small_step"]
    from course_utils.grading import predict, registry
    for exercise_id in ids[:-1]:  # each mapped id is a real exercise today
        registry.get(exercise_id)
    assert ids[-1] in predict.QUESTIONS  # and a prediction id a real question
