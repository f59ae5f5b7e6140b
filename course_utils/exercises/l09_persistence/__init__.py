"""Exercises of 09_persistence: loading what fits into a changed model, loading a GPU/DDP
checkpoint on a CPU, checkpoints that resume bit-identically, and exporting with a dynamic batch.

Graders that write files do it inside a fresh temporary directory that is removed afterwards.
Unsafe loading is caught with :class:`course_utils.lesson_props.l09_persistence.HarmlessPayload`, which only
counts that it ran.
"""

from . import load_matching, load_state_dict_cpu, save_checkpoint, load_checkpoint, export_with_dynamic_batch  # noqa: E402,F401,I001
