"""read_scalars: a tag's scalar events from a TensorBoard log directory, read back offline.

The notebook states the use (a plotting script over long, resumed and partial runs, wanting the
curve of the training that produced the final model) and shows a resumed run's raw events; the
learner decides the reader's budget, which of a step's two values to keep, and what a missing
tag gives.

Subtle: `EventAccumulator` keeps at most 10 000 scalar events per tag unless told otherwise
(`size_guidance={"scalars": 0}`), so a long run comes back sampled; a run resumed into the same
directory logs a step again and the later value counts; an absent tag raises `KeyError` in
`Scalars` (the task wants `{}`); `Reload()` must be called; `.value`, not `.wall_time`.
The log directories are written on first use (cached per process; the edge cases' ones, the
10 050-event log among them, about 0.7 s, at `exercises_for` time through `prepare`) and deleted
at exit.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

from course_utils.grading import Case, Exercise, Mistake, Rand, register

from ._kit import LESSON

# --- reference: the solution notebook's answer (generated from solutions/07_debugging.py)
from ...answers.l07_debugging import read_scalars

_ROOT: list[str] = []
_WRITTEN: dict[tuple, str] = {}


@dataclass(frozen=True)
class Log:
    """What a log directory holds: scalar writes ``(tag, step, value)`` in order, histogram tags."""

    scalars: tuple[tuple[str, int, float], ...]
    histograms: tuple[str, ...] = ()
    about: str = ""
    resume_at: int = 0  # > 0: the writes from this index on come from a second SummaryWriter (a second file)

    def __deepcopy__(self, memo: dict) -> Log:  # immutable: the checker's copies of a case share it
        return self

    def __repr__(self) -> str:
        return f"<a log directory: {self.about or f'{len(self.scalars)} scalar events'}>"

    def path(self) -> str:
        key = (self.scalars, self.histograms, self.resume_at)
        if key not in _WRITTEN:
            import torch
            from torch.utils.tensorboard import SummaryWriter

            if not _ROOT:
                _ROOT.append(tempfile.mkdtemp(prefix="course_l07_"))
                atexit.register(shutil.rmtree, _ROOT[0], True)
            logdir = tempfile.mkdtemp(dir=_ROOT[0])
            cut = self.resume_at or len(self.scalars)
            with SummaryWriter(logdir) as w:
                for tag, step, value in self.scalars[:cut]:
                    w.add_scalar(tag, value, step)
                for i, tag in enumerate(self.histograms):
                    w.add_histogram(tag, torch.arange(10.0) * (i + 1), 0)
            if self.resume_at:  # a resumed run: a second writer, a second file that sorts after the first
                first = os.listdir(logdir)[0]
                with SummaryWriter(logdir) as w:
                    for tag, step, value in self.scalars[cut:]:
                        w.add_scalar(tag, value, step)
                second = next(f for f in os.listdir(logdir) if f != first)
                stamp = int(first.split(".")[3]) + 1
                resumed = f"events.out.tfevents.{stamp:010d}.resumed"
                os.rename(os.path.join(logdir, second), os.path.join(logdir, resumed))
            _WRITTEN[key] = logdir
        return _WRITTEN[key]


# --- cases
def _cases(r: Rand) -> Case:
    tags = r.choice([["loss/train", "loss/val"], ["loss"], ["train/loss", "lr", "grad_norm/0"]])
    writes = []
    for tag in tags:
        step = r.integer(0, 5)
        for _ in range(r.integer(3, 25)):
            writes.append((tag, step, round(r.uniform(-3, 3), 4)))
            step += r.choice([1, 1, 1, 2, 10])
    if r.uniform(0, 1) < 0.5:  # resumed from a checkpoint: some steps logged again, new values
        tag = r.choice(tags)
        steps = [s for t, s, _ in writes if t == tag]
        for s in steps[r.integer(0, len(steps) - 1):]:
            writes.append((tag, s, round(r.uniform(-3, 3), 4)))
    per_tag = {t: [w for w in writes if w[0] == t] for t in tags}
    mixed = []  # the tags interleaved, each in its own order
    while any(per_tag.values()):
        mixed.append(per_tag[r.choice([t for t in tags if per_tag[t]])].pop(0))
    hists = ("weights/0",) if r.uniform(0, 1) < 0.5 else ()
    asked = r.choice(tags + (["loss/test"] if r.uniform(0, 1) < 0.15 else []))
    return Case((Log(tuple(mixed), hists), asked))


_BIG = Log(tuple(("loss", s, round((s % 97) / 97, 4)) for s in range(10_050)),
           about="10 050 steps of 'loss'")
EDGE_CASES = [  # the first is the warm-up's (run at `exercises_for` time): keep it small
    Case((Log((("loss/train", 0, 2.3), ("loss/val", 0, 2.4), ("loss/train", 1, 1.1), ("loss/val", 1, 1.5)),
              ("weights/0",), about="two tags and a histogram, two epochs"), "loss/val"),
         label="two tags and a histogram", show_inputs=True),
    Case((Log(tuple(("loss", s, 1.0 / (s + 1)) for s in range(8)) + tuple(("loss", s, 0.5) for s in range(5, 10)),
              about="steps 0-7, then a resumed run logging steps 5-9 again in a second file", resume_at=8), "loss"),
         label="a resumed run: steps 5-7 logged twice", show_inputs=True),
    Case((Log((("loss", 0, 1.0),), about="one tag, 'loss'"), "accuracy"), label="a tag that was never logged",
         show_inputs=True),
    Case((_BIG, "loss"), label="a long run: 10 050 logged steps", show_inputs=True),
]


def _write_edge_logs() -> None:
    for case in EDGE_CASES:
        case.args[0].path()


# --- run
def _run(answer: Any, case: Case) -> Any:
    log, tag = case.args
    return answer(log.path(), tag)


# --- wrong answers
def _load(logdir, **kw):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(logdir, **kw)
    acc.Reload()
    return acc


def _default_guidance(logdir, tag):
    acc = _load(logdir)
    return {e.step: e.value for e in acc.Scalars(tag)} if tag in acc.Tags()["scalars"] else {}


def _first_wins(logdir, tag):
    acc = _load(logdir, size_guidance={"scalars": 0})
    out: dict = {}
    for e in acc.Scalars(tag) if tag in acc.Tags()["scalars"] else []:
        out.setdefault(e.step, e.value)
    return out


def _wall_time(logdir, tag):
    acc = _load(logdir, size_guidance={"scalars": 0})
    return {e.step: e.wall_time for e in acc.Scalars(tag)} if tag in acc.Tags()["scalars"] else {}


def _raises_on_missing(logdir, tag):
    return {e.step: e.value for e in _load(logdir, size_guidance={"scalars": 0}).Scalars(tag)}


def _pairs(logdir, tag):
    acc = _load(logdir, size_guidance={"scalars": 0})
    return [(e.step, e.value) for e in acc.Scalars(tag)] if tag in acc.Tags()["scalars"] else []


def _no_reload(logdir, tag):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(logdir, size_guidance={"scalars": 0})
    return {e.step: e.value for e in acc.Scalars(tag)} if tag in acc.Tags()["scalars"] else {}


# --- declaration
register(Exercise(
    lesson=LESSON, name="read_scalars", title="Read a tag's scalars back from a TensorBoard log directory",
    reference=read_scalars, cases=_cases, run=_run, edge_cases=EDGE_CASES, n_random=6, timeout=20.0,
    preload=("torch.utils.tensorboard", "tensorboard.backend.event_processing.event_accumulator"),
    prepare=_write_edge_logs,
    arg_names=("logdir", "tag"),
    mistakes=[
        Mistake("downsampled", "Your dict misses steps of a long run: by default `EventAccumulator` keeps at most "
                "10 000 scalar events per tag and samples the rest away. Pass `size_guidance={\"scalars\": 0}` "
                "(0 means keep everything).", _default_guidance),
        Mistake("first_wins", "Where a step was logged twice (a resumed run), you kept the first value. The later "
                "one is the run that continued: let it overwrite.", _first_wins),
        Mistake("wall_time", "Those are the events' `.wall_time` (seconds since 1970); the logged number is "
                "`.value`.", _wall_time),
        Mistake("missing_tag", "Asked for a tag that is not in the log, `Scalars(tag)` raises `KeyError`; return "
                "`{}` instead (check `tag in acc.Tags()[\"scalars\"]` first).", _raises_on_missing),
        Mistake("list_not_dict", "Return a dict `{step: value}`, not a list of pairs: a step logged twice must "
                "appear once.", _pairs),
        Mistake("no_reload", "You got nothing back: an `EventAccumulator` reads the files only when you call "
                "`acc.Reload()`.", _no_reload),
    ],
    hints=[
        "The resumed run went back to step 5's checkpoint: which of the two values at step 6 did the final "
        "model's training produce, and in which order does the reader hand the events back? And what did the "
        "lesson's reader not do that a 10 050-step run needs?",
        "Three decisions: the reader keeps every event (its budget for scalars has a value that means 'no "
        "limit'); a step logged twice keeps the value logged last, so later events overwrite earlier ones; a "
        "tag the run never logged gives an empty dict, checked before asking for it.",
        "Names: EventAccumulator with size_guidance, Reload, Tags, Scalars, and each event's step and value.",
    ],
))
