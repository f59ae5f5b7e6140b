"""Exercises of 11_distributed: sharding like DistributedSampler, what DDP's all-reduce
computes, rescaling the ranks' losses for unequal shards, gradient accumulation with one
all-reduce (``no_sync``), and merging the ranks' BatchNorm statistics like SyncBatchNorm.

Every check runs in one process on a CPU: ranks are simulated, and ``no_sync`` is checked with
``CountingDDP``, which counts the all-reduces DDP would do.
"""

from . import shard_indices, data_parallel_grads, rank_loss_scale, accumulate_grads, merge_batch_stats  # noqa: E402,F401,I001
