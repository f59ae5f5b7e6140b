"""Exercises of 05_training_loop: the training and evaluation loops (graded by watching a small
model through hooks, see ``_kit``), early stopping, a warm-up + cosine schedule, gradient clipping
and gradient accumulation."""

from . import (  # noqa: E402, F401 - registration order: the notebook's
    train_one_epoch,
    evaluate,
    early_stopping,
    warmup_cosine,
    clip_grad_norm,
    accumulated_step,
)
