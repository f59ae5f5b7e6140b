"""Issue 24, part B: `grade --shard K/N` grades a fixed share of a class, `grade merge` joins the
shards' gradebooks into what one run makes, and `--workers` defaults to the machine's CPUs (and
memory), not 4."""

from __future__ import annotations

import collections
import json
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from course_utils.instructor import capacity, grade_merge, grade_shard, gradebook, sandbox

ROOT = Path(__file__).resolve().parents[1]
LESSON = "00_start_here"


# ------------------------------------------------------------------ which notebooks a shard takes


def test_shards_split_a_class_exactly_whatever_the_order_and_mount():
    rels = [Path(f"s{i:03d}") / f"{LESSON}.ipynb" for i in range(200)] + [Path(f"x_{i}_01_tensors.ipynb")
                                                                          for i in range(40)]
    items = [(Path("/mnt/a/subs") / r, Path("/mnt/a/subs")) for r in rels]
    n = 7
    shards = [grade_shard.select(items, k, n) for k in range(n)]
    assert sorted(p for s in shards for p, _ in s) == sorted(p for p, _ in items)  # each once, none lost
    assert all(len(s) > 10 for s in shards)  # a fair share each
    shuffled = random.Random(1).sample(items, len(items))
    moved = [(Path("/data/other") / r, Path("/data/other")) for r in rels]  # another pod's mount point
    for k in range(n):
        assert {p for p, _ in grade_shard.select(shuffled, k, n)} == {p for p, _ in shards[k]}
        assert {p.relative_to("/data/other") for p, _ in grade_shard.select(moved, k, n)} == \
            {p.relative_to("/mnt/a/subs") for p, _ in shards[k]}


@pytest.mark.parametrize("bad", ["3", "3/3", "-1/3", "a/b", "0/0", "1/"])
def test_bad_shards_are_usage_errors(bad):
    with pytest.raises(grade_shard.ShardError):
        grade_shard.parse(bad)
    assert grade_shard.parse("2/3") == (2, 3)


# ------------------------------------------------------------------ workers


def _cgroup(tmp_path, cpu_max=None, mem_max=None, mem_current="0"):
    root = tmp_path / "cgroup"
    root.mkdir()
    if cpu_max is not None:
        (root / "cpu.max").write_text(cpu_max + "\n")
    if mem_max is not None:
        (root / "memory.max").write_text(mem_max + "\n")
        (root / "memory.current").write_text(mem_current + "\n")
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal: {512 * 1024**2} kB\nMemAvailable: {480 * 1024**2} kB\n")  # 480 GB free
    return root, meminfo


def test_default_workers_use_every_cpu_of_a_big_machine(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(48)), raising=False)
    root, meminfo = _cgroup(tmp_path, cpu_max="max 100000", mem_max="max")
    assert capacity.default_workers(2 * 1024**3, sandbox.MAX_WORKERS, root, meminfo) == 48  # not 4


def test_default_workers_respect_a_pods_cpu_quota_and_memory_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(96)), raising=False)
    root, meminfo = _cgroup(tmp_path, cpu_max="800000 100000", mem_max=str(64 * 1024**3))
    assert capacity.default_workers(2 * 1024**3, sandbox.MAX_WORKERS, root, meminfo) == 8  # 8 CPUs of quota
    (root / "cpu.max").write_text("max 100000\n")
    (root / "memory.current").write_text(str(54 * 1024**3))  # 10 GB left under the pod's limit
    assert capacity.default_workers(2 * 1024**3, sandbox.MAX_WORKERS, root, meminfo) == 5
    (root / "memory.current").write_text(str(64 * 1024**3))
    assert capacity.default_workers(2 * 1024**3, sandbox.MAX_WORKERS, root, meminfo) == 1  # never 0
    assert capacity.default_workers(1, 3, root / "none", meminfo) == 3  # the sandboxes' user ids cap it


# ------------------------------------------------------------------ shards, run at once, then merged


def _class(folder: Path) -> Path:
    """Quick submissions (nothing to run): broken notebooks of lesson 00, a duplicate, strangers."""
    subs = folder / "subs"
    for i in range(8):
        (subs / f"s{i}").mkdir(parents=True)
        (subs / f"s{i}" / f"{LESSON}.ipynb").write_text('{"cells": [ broken ' + str(i))
    (subs / f"s3_{LESSON}.ipynb").write_text("{}")  # s3 hands in lesson 00 twice
    for i in range(3):
        (subs / f"holiday_{i}.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                                             "nbformat_minor": 5}))
    return subs


def _grade(*args: str) -> subprocess.Popen:
    flags = ["--no-sandbox"] if sandbox.works() else []
    return subprocess.Popen([sys.executable, "-m", "course_utils", "grade", *args, *flags, "--timeout", "30"],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen) -> str:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return out


def _content(book: Path) -> tuple[collections.Counter, collections.Counter]:
    db = sqlite3.connect(book)
    try:  # everything but when and how fast it was graded
        notebooks = collections.Counter(db.execute("SELECT path_bytes, sha256, path, student, lesson, error, problems, "
                                                   "sandboxed FROM notebooks").fetchall())
        grades = collections.Counter(db.execute("SELECT * FROM grades").fetchall())
    finally:
        db.close()
    return notebooks, grades


@pytest.mark.slow
def test_shards_graded_at_once_and_merged_equal_one_run(tmp_path):
    subs = _class(tmp_path)
    one, shards = tmp_path / "one", tmp_path / "shards"
    one.mkdir()
    shards.mkdir()
    exports = ["--csv", "grades.csv", "--json", "grades.json", "--wide-csv", "wide.csv"]
    rel = os.path.relpath(subs, ROOT)  # the same relative path for every shard, as in a shared volume
    procs = [_grade(rel, "--gradebook", str(one / "gradebook.sqlite"), *[str(one / e) if "." in e else e
                                                                          for e in exports])]
    procs += [_grade(rel, "--shard", f"{k}/3", "--gradebook", str(shards / f"shard-{k}.sqlite"), "--workers", "1")
              for k in range(3)]
    outs = [_finish(p) for p in procs]
    taken = [int(out.split("Shard ", 1)[1].split(": ", 1)[1].split(" of ", 1)[0]) for out in outs[1:]]
    assert sum(taken) == 12 and all(taken), outs
    assert f"{capacity.default_workers(sandbox.Limits.memory, sandbox.MAX_WORKERS)} at a time" in outs[0]

    merged = tmp_path / "class.sqlite"
    code = grade_merge.main([*map(str, sorted(shards.glob("shard-*.sqlite"))), "--out", str(merged), "-q",
                             *[str(tmp_path / e) if "." in e else e for e in exports]])
    assert code == 0
    assert _content(merged) == _content(one / "gradebook.sqlite")
    for name in ("grades.csv", "grades.json", "wide.csv"):
        assert (tmp_path / name).read_text() == (one / name).read_text(), name
    assert any(r["duplicate"] for r in json.loads((tmp_path / "grades.json").read_text()))

    # merging a shard again (a rerun, a retried pod) duplicates nothing
    assert gradebook.merge([shards / "shard-1.sqlite"], merged) == {"added": 0, "replaced": 0,
                                                                     "kept": taken[1]}
    assert _content(merged) == _content(one / "gradebook.sqlite")
    assert len(grade_merge.reports(merged)) == 12


def test_merge_refuses_to_read_what_it_writes_and_non_gradebooks(tmp_path, capsys):
    book = tmp_path / "a.sqlite"
    gradebook.Gradebook(book).close()
    assert grade_merge.main([str(book), "--out", str(book)]) == 2
    (tmp_path / "junk.sqlite").write_text("not a database")
    assert grade_merge.main([str(tmp_path / "junk.sqlite"), "--out", str(tmp_path / "m.sqlite")]) == 2
    assert grade_merge.main([str(tmp_path / "missing.sqlite"), "--out", str(tmp_path / "m.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "being written" in err and "not a gradebook" in err and "no gradebook at" in err


def test_a_file_naming_a_student_of_another_shard_is_refused_as_in_one_run(tmp_path):
    """Who is a student is decided over the whole batch, before sharding: `mallory/alice_...` is
    refused in every shard, also one that holds none of alice's own files (merge = one run)."""
    from course_utils.instructor import grade

    subs = tmp_path / "subs"
    for rel in (f"alice/{LESSON}.ipynb", f"mallory/alice_{LESSON}.ipynb"):
        (subs / rel).parent.mkdir(parents=True, exist_ok=True)
        (subs / rel).write_text('{"cells": [ not json')  # refused unread, or a quick error row
    items = [(subs / "alice" / f"{LESSON}.ipynb", subs), (subs / "mallory" / f"alice_{LESSON}.ipynb", subs)]
    n = next(n for n in range(2, 50) if len({grade_shard.shard_of(p, r, n) for p, r in items}) == 2)
    k = grade_shard.shard_of(*items[1], n)  # mallory's file alone in its shard
    out = tmp_path / "g.csv"
    code = grade.main([str(subs), "--shard", f"{k}/{n}", "--no-sandbox", "--workers", "1", "--quiet",
                       "--csv", str(out)])
    assert code == 0
    import csv

    with open(out, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and all(r["mistake"] == "names_another_student" and r["student"] == "mallory" for r in rows), rows
