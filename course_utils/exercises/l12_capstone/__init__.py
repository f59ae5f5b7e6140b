"""Exercises of 12_capstone, the integrative project: the learner's own pieces of lessons 04, 05
and 09 (brought in by ``yours.your_pieces``) assembled into one pipeline, in seven graded parts:
a stratified split and its loaders, a training run with warm-up and early stopping, a
confusion matrix, a run that resumes bit-identically after a power cut, ONNX parity with
onnxruntime, a bug hunt, and a digit classifier graded on held-out images (how:
``digit_classifier.py``). Every part is graded with the course's pieces on the grader's own
data, never with the learner's pieces or the notebook's digits."""

# the notebook's order is the registration order
from . import (  # noqa: E402, F401 - registration order: the notebook's
    split_loaders,
    fit_with_early_stopping,
    confusion_matrix,
    resume_training,
    onnx_parity,
    train_and_score,
    digit_classifier,
)
