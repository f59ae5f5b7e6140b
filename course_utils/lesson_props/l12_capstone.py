"""The course's own pieces that the capstone (lesson 12) assembles: the answers of lessons 04,
05 and 09 that the capstone's pipeline is built from, as one namespace.

- :func:`course_pieces`: ``stratified_split`` (04), ``train_one_epoch``, ``evaluate``,
  ``EarlyStopping``, ``warmup_cosine`` (05), ``save_checkpoint``, ``load_checkpoint``,
  ``export_with_dynamic_batch`` (09), each the notebook's answer generated into
  ``answers/`` (one source).

The capstone's graders run a learner's capstone answers with these pieces, never with the
learner's own earlier answers (so an earlier answer cannot make a capstone check pass), and
``exercises.l12_capstone.yours`` falls back to them for a piece the learner has not solved.
Like ``l05_training_lab.train_one_epoch``, they are public course helpers: the instructor's
staged course keeps them (``instructor.sandbox.shared_answers``), and the judge still rejects a
submission that hands one of them in as its own answer (``reference_answer``).
"""

from __future__ import annotations

import types

from ..answers.l04_data import stratified_split
from ..answers.l05_training_loop import EarlyStopping, evaluate, train_one_epoch, warmup_cosine
from ..answers.l09_persistence import export_with_dynamic_batch, load_checkpoint, save_checkpoint

__all__ = ["PIECES", "course_pieces"]

PIECES: dict[str, str] = {
    "stratified_split": "04_data",
    "train_one_epoch": "05_training_loop",
    "evaluate": "05_training_loop",
    "EarlyStopping": "05_training_loop",
    "warmup_cosine": "05_training_loop",
    "save_checkpoint": "09_persistence",
    "load_checkpoint": "09_persistence",
    "export_with_dynamic_batch": "09_persistence",
}
"""Each piece the capstone uses and the lesson whose exercise it is (exercise id
``LESSON.NAME``), in course order."""

_COURSE = {
    "stratified_split": stratified_split, "train_one_epoch": train_one_epoch, "evaluate": evaluate,
    "EarlyStopping": EarlyStopping, "warmup_cosine": warmup_cosine, "save_checkpoint": save_checkpoint,
    "load_checkpoint": load_checkpoint, "export_with_dynamic_batch": export_with_dynamic_batch,
}


def course_pieces() -> types.SimpleNamespace:
    """A fresh namespace holding the course's version of every piece in :data:`PIECES`."""
    return types.SimpleNamespace(**{name: _COURSE[name] for name in PIECES})
