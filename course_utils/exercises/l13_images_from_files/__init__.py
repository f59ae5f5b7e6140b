"""Exercises of 13_images_from_files: a lazy file ``Dataset`` from a CSV, a split by font, the
normalisation statistics of the training split, a transform pipeline for ``ImageFolder``'s
images, and a label-preserving augmentation (probed on letters a flip or a large rotation
would turn into no letter)."""

from . import (  # noqa: F401 - registration order: the notebook's
    glyph_files,
    split_by_font,
    train_stats,
    make_transform,
    make_augment,
)
