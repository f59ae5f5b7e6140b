"""Exercises of 10_gpu_amp_ddp: moving nested batches to a device, a bf16 autocast training
step, gradient checkpointing, sharding like DistributedSampler, and what DDP's all-reduce
computes.

Every check runs on a CPU. Moving to a device is checked with the ``meta`` device (it exists on
every machine), so a tensor left behind is visible without a GPU.
"""

from . import to_device, amp_train_step, checkpointed_forward, shard_indices, data_parallel_grads  # noqa: E402,F401,I001
