"""Lesson props: what one lesson's notebook imports for its demos (widgets, plots, small
tools), not machinery. Each module is named for the lesson it serves:

- ``l01_explorers``: the broadcasting explorer.
- ``l02_autograd_graph``: draws the autograd graph; ``l02_descent``: the learning-rate demo.
- ``l03_activations``: activation histograms and the init-scale widget.
- ``l04_data_lab``: the Dataset/DataLoader demos; ``l04_data_workers``: worker-safe datasets
  (``ShardedRange``, ``reseed_worker``), which lesson 04's exercises use too.
- ``l05_training_lab``: the training loop's helpers (also reused by lesson 12).
- ``l10_devices``: device-agnostic timing; ``l11_distributed``: how a sampler shards data, and a
  stand-in for DDP that counts all-reduces.
- ``l09_persistence``: checkpoint helpers and the harmless unsafe-load payload.
- ``l12_capstone``: the course's lesson 04/05/09 answers the capstone's pipeline and graders use.
- ``l14_transfer_learning``: ``GlyphResNet`` and its letter-pretrained weights, shipped in ``data/``
  (``tools/pretrain_glyph_backbone.py`` makes them), which lesson 14's exercises check on too.

Props import nothing of the course except the shared lesson material (``course_utils.datasets``,
``course_utils.glyphs``, ``course_utils.plotting``); the grading core never imports them (tests/test_architecture.py).
"""
