"""Exercises of 04_data: a sliding-window ``Dataset``, a stratified split, a class-balancing
sampler, a padding ``collate_fn``, a DataLoader of one's own (``MiniLoader``), an
``IterableDataset`` sharded across DataLoader workers and a ``worker_init_fn`` that reseeds each
worker's NumPy generator (workers are simulated in this process, see ``_kit``)."""

from . import (  # noqa: E402, F401 - registration order: the notebook's
    window_dataset,
    stratified_split,
    balanced_sampler,
    pad_collate,
    mini_loader,
    sharded_range,
    reseed_worker,
)
