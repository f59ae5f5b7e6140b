"""Generated from solutions/08_convolutions.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 08_convolutions take their references from here."""

# ruff: noqa

import math
import torch
import torch.nn.functional as F
from torch import nn


def conv_output_size(size, kernel_size, stride=1, padding=0, dilation=1):
    return (size + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1


def conv2d_by_hand(x, weight, bias=None, stride=1, padding=0, dilation=1):
    x = F.pad(x, (padding, padding, padding, padding))  # zeros on all four sides
    n, _, h, w = x.shape
    c_out, _, kh, kw = weight.shape
    h_out = (h - dilation * (kh - 1) - 1) // stride + 1
    w_out = (w - dilation * (kw - 1) - 1) // stride + 1
    rows = []
    for i in range(h_out):
        cols = []
        for j in range(w_out):
            top, left = i * stride, j * stride
            patch = x[:, :, top:top + dilation * (kh - 1) + 1:dilation,
                      left:left + dilation * (kw - 1) + 1:dilation]  # (N, C_in, kh, kw)
            cols.append(torch.einsum("nchw,ochw->no", patch, weight))  # (N, C_out)
        rows.append(torch.stack(cols, dim=-1))  # (N, C_out, W_out)
    out = torch.stack(rows, dim=-2)  # (N, C_out, H_out, W_out)
    if bias is not None:
        out = out + bias.reshape(1, c_out, 1, 1)
    return out


def conv_param_count(in_channels, out_channels, n_params):
    fits = []
    for groups in range(1, in_channels + 1):
        if in_channels % groups or out_channels % groups:
            continue  # nn.Conv2d refuses groups that do not divide both channel counts
        for bias in (True, False):
            weights = n_params - (out_channels if bias else 0)
            per_tap = out_channels * (in_channels // groups)  # the weight is (out, in // groups, kh, kw)
            if weights > 0 and weights % per_tap == 0:
                area = weights // per_tap
                kh = max(d for d in range(1, math.isqrt(area) + 1) if area % d == 0)
                fits.append({"kernel_size": kh if kh * kh == area else (kh, area // kh), "bias": bias, "groups": groups})
    # the likeliest layer: a square kernel if one fits, then the fewest groups, then a bias (the default)
    if not fits:
        return None
    return min(fits, key=lambda c: not isinstance(c["kernel_size"], int))


def max_pool_by_hand(x, kernel_size, stride=None):
    stride = kernel_size if stride is None else stride
    windows = x.unfold(2, kernel_size, stride).unfold(3, kernel_size, stride)  # (N, C, H', W', k, k)
    return windows.amax(dim=(-2, -1))


def receptive_field(layers):
    rf, jump = 1, 1  # one output pixel sees 1 input pixel; neighbours are `jump` pixels apart
    for kernel_size, stride, dilation in layers:
        rf += (kernel_size - 1) * dilation * jump
        jump *= stride
    return rf


class SmallVGG(nn.Module):
    def __init__(self, in_channels, num_classes, widths, image_size):
        super().__init__()
        height, width = image_size
        layers = []
        channels = in_channels
        for w in widths:
            layers += [nn.Conv2d(channels, w, kernel_size=3, padding=1, bias=False),
                       nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2)]
            channels, height, width = w, height // 2, width // 2
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(channels * height * width, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))
