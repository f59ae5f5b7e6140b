"""Exercises of 14_transfer_learning: a residual block, global average pooling, the pretrained
model's preprocessing, a new head, freezing a backbone (weights and BatchNorm statistics), and
parameter groups for fine-tuning. Most ask for a decision: which statistics, which parameters,
which mode, which rate."""

from . import residual_block, global_avg_pool, preprocess, replace_head, freeze_all_but_fc, finetune_param_groups  # noqa: F401 (in the notebook's order)
