"""Exercises of 01_tensors: dtypes (a NumPy image to float32), shapes and views (flattening a
batch), broadcasting (row normalisation, pairwise distances), masks and indexing (a masked mean,
picking each label's score), reductions (counting correct predictions) and matrix products
(attention, by hand)."""

# the notebook's order is the registration order
from . import (  # noqa: E402, F401
    image_to_tensor,
    batch_flatten,
    normalize_rows,
    pairwise_distances,
    masked_mean,
    pick_scores,
    count_correct,
    attention,
)
