"""Exercises of 10_performance: moving nested batches to a device, an honest timer for
asynchronous devices, the autocast dtype and scaler per device, a mixed-precision training step
with clipping, and deciding which blocks to checkpoint.

Every check runs on a CPU. Moving to a device is checked with the ``meta`` device (it exists on
every machine), so a tensor left behind is visible without a GPU; the timer is checked against a
simulated asynchronous device with its own clock.
"""

from . import to_device, median_time, amp_policy, amp_train_step, checkpointed_forward  # noqa: E402,F401,I001
