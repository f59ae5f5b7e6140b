from __future__ import annotations

import itertools

import pytest
import torch

from course_utils.lesson_props.l01_explorers import broadcast_explorer, broadcast_report, parse_shape

SHAPES = [(), (1,), (3,), (4,), (3, 1), (1, 4), (3, 4), (2, 3, 1), (2, 1, 4), (5, 1, 1)]


@pytest.mark.parametrize("a,b", list(itertools.product(SHAPES, SHAPES)))
def test_rules_agree_with_pytorch(a, b):
    rep = broadcast_report(a, b)
    try:
        truth = tuple(torch.broadcast_shapes(a, b))
    except RuntimeError:
        truth = None
    assert rep.result == truth
    assert rep.torch_says.startswith("shape" if truth is not None else "RuntimeError")


def test_error_shows_pytorchs_real_message():
    rep = broadcast_report((3, 4), (3,))
    assert "The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 1" in rep.torch_says
    assert "✗" in rep.text()


@pytest.mark.parametrize("text,shape", [("3, 1", (3, 1)), ("(2,3)", (2, 3)), ("", ()), ("4", (4,)), ("2x3", (2, 3))])
def test_parse_shape(text, shape):
    assert parse_shape(text) == shape


def test_parse_shape_rejects_nonsense():
    with pytest.raises(ValueError):
        parse_shape("a, b")


def test_widget_responds_to_a_change():
    w = broadcast_explorer("3, 1", "4")
    box_a, box_b = w.children[0].children
    out = w.children[1]
    assert "(3, 4)" in out.value
    box_b.value = "2, 2"
    assert "do not broadcast" in out.value
    box_a.value = "oops"
    assert "Type sizes" in out.value
