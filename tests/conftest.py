"""Slow marks for parametrized grader tests (CONTRIBUTING.md, "Gates and the fast loop").

The contract, red-team, oracle and adversarial tests are parametrized by exercise id; the
exercises below train a real model or write and load files on every case, so each of their
cases takes seconds where the others take milliseconds. Their cases are marked `slow` here
(one list instead of a mark inside each parametrization); the full test command still runs
them. Measured with `python -m pytest tests/test_exercises.py --durations=80`.
"""

from __future__ import annotations

import re

import pytest

SLOW_EXERCISES = (
    "09_capstone.DigitClassifier",  # trains a classifier per case (~30 s a test, busy machine)
    "07_persistence.save_checkpoint",  # trains, saves and reloads per case
    "07_persistence.load_checkpoint",
    "07_persistence.export_with_dynamic_batch",  # torch.export per case
    "02_autograd.gradient_descent",
    "04_data.ShardedRange",  # DataLoader worker processes
    "05_training_loop.train_one_epoch",
    "05_training_loop.accumulated_step",
    "06_gpu_amp_ddp.checkpointed_forward",
    "06_gpu_amp_ddp.data_parallel_grads",
)
_SLOW_ID = re.compile(r"\[(?:[^\]]*[-,])?(" + "|".join(re.escape(e) for e in SLOW_EXERCISES) + r")(?:[-\],]|$)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _SLOW_ID.search(item.nodeid):
            item.add_marker(pytest.mark.slow)
