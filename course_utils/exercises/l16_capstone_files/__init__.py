"""Exercises of 16_capstone_files: the decisions of a pipeline from a folder of images to an
exported model. Which transform augments, when to stop, which checkpoint to keep, where the
preprocessing lives, how to export; then the whole pipeline, graded on held-out fonts."""

from . import make_transforms, should_stop, pick_checkpoint, deployable, export_model, build_classifier  # noqa: F401 (in the notebook's order)
