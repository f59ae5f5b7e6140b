"""Exercises of 07_debugging: the first module that makes NaN/inf (forward hooks), overfitting one
batch, per-layer gradient norms, reading TensorBoard scalars back offline, and diagnosing
training curves.

Hooks a learner registers and forgets are found and removed by :mod:`._kit` (on every module of
the case's model, on its parameters, and torch's global module hooks), so a check never leaves
one running in the learner's session.
"""

from . import first_nonfinite, overfit_one_batch, grad_norms, read_scalars, diagnose  # noqa: F401 (in the notebook's order)
