"""Exercises of 06_losses_optimizers: a stable log-softmax, cross-entropy with weight,
ignore_index and label smoothing by hand, pos_weight for multi-label targets, parameter groups
without weight decay, and SGD with momentum as an ``Optimizer`` subclass.

Rules the lesson states ("without `softmax`/`logsumexp`", "without `cross_entropy`/`nll_loss`",
"without `torch.optim.SGD`") are enforced by :mod:`._kit`'s ``TorchFunctionMode`` or by
replacing the class for the duration of the call.
"""

from . import stable_log_softmax, cross_entropy_by_hand, pos_weight_for, param_groups_no_decay, sgd_momentum  # noqa: F401 (in the notebook's order)
