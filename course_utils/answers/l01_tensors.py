"""Generated from solutions/01_tensors.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 01_tensors take their references from here."""

# ruff: noqa

import numpy as np
import torch


def image_to_tensor(image):
    # np.ascontiguousarray: a flipped image (negative strides) is still an image, and
    # torch.from_numpy refuses negative strides
    return torch.from_numpy(np.ascontiguousarray(image)).float().div(255).unsqueeze(0)


def batch_flatten(x):
    return x.flatten(1)  # reshape(len(x), -1) cannot infer -1 when N = 0


def normalize_rows(x):
    return x / x.sum(dim=1, keepdim=True)


def pairwise_distances(a, b):
    return (a[:, None, :] - b[None, :, :]).pow(2).sum(dim=-1).sqrt()


def masked_mean(x, mask):
    counts = mask.sum(dim=1)
    sums = torch.where(mask, x, torch.zeros_like(x)).sum(dim=1)
    return torch.where(counts > 0, sums / counts.clamp(min=1), torch.zeros_like(sums))


def pick_scores(scores, labels):
    return scores.gather(-1, labels.unsqueeze(-1)).squeeze(-1)


def count_correct(logits, labels):
    return int((logits.argmax(dim=1) == labels).sum().item())


def attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # softmax gives these exactly 0
    return torch.softmax(scores, dim=-1) @ v
