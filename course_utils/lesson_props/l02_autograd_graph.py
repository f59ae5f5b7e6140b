"""Draw the autograd graph behind a tensor with matplotlib (no system graphviz needed).

Lesson 02 uses it to show what ``grad_fn`` records: every operation on tensors that require
grad adds a node (``MulBackward0``, ``SinBackward0``...) pointing at the nodes of its inputs;
leaves that require grad end in ``AccumulateGrad`` nodes, which write into ``.grad``.

>>> import torch
>>> x = torch.tensor(2.0, requires_grad=True)
>>> y = (x * 3).sin()
>>> [n.label for n in graph_nodes(y, names={"x": x, "y": y})]
['y = SinBackward0', 'MulBackward0', 'x (leaf)']

:func:`graph_nodes` returns the graph as plain data (easy to test); :func:`draw_graph` draws it
with inputs on the left and the output on the right, the direction the forward pass ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Mapping

import matplotlib

matplotlib.rcParams.setdefault("figure.dpi", 80)

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

__all__ = ["GraphNode", "draw_graph", "graph_nodes"]

_COLORS = {"leaf": "#dbe9f6", "op": "#fde9cf", "output": "#d9f0d3"}


@dataclass
class GraphNode:
    """One node of the backward graph, as :func:`draw_graph` shows it.

    ``kind`` is ``"output"`` (the node that produced the tensor you passed), ``"op"`` (an
    intermediate operation) or ``"leaf"`` (an ``AccumulateGrad`` node: a tensor that requires
    grad and was created by you, not by an operation). ``inputs`` are indices of the nodes
    this one's inputs came from (edges of the forward computation).
    """

    label: str
    kind: str
    inputs: list[int] = field(default_factory=list)
    depth: int = 0


def _leaf_label(t: torch.Tensor, names: Mapping[int, str]) -> str:
    name = names.get(id(t))
    if name is not None:
        return f"{name} (leaf)"
    shape = "×".join(str(s) for s in t.shape) or "scalar"
    return f"leaf {shape}"


def graph_nodes(output: torch.Tensor, names: Mapping[str, torch.Tensor] | None = None) -> list[GraphNode]:
    """The backward graph of ``output`` as a list of :class:`GraphNode` (output node first).

    ``names`` maps a display name to a tensor (``{"x": x, "w": w}``) so leaves are labelled
    with their variable names; the output is labelled with the name given to it, if any.
    A tensor without ``grad_fn`` (a leaf, or one created without tracking) gives one node.
    """
    by_id = {id(t): n for n, t in (names or {}).items()}
    out_name = by_id.get(id(output))
    if output.grad_fn is None:
        label = _leaf_label(output, by_id) if output.requires_grad else "no graph (requires_grad=False)"
        return [GraphNode(label=label, kind="leaf" if output.requires_grad else "output")]

    index: dict[object, int] = {}
    nodes: list[GraphNode] = []
    order = [output.grad_fn]
    index[output.grad_fn] = 0
    nodes.append(GraphNode(label=type(output.grad_fn).__name__, kind="output"))
    i = 0
    while i < len(order):  # breadth first, so the numbering reads from the output backwards
        fn = order[i]
        for child, _ in getattr(fn, "next_functions", ()):
            if child is None:
                continue
            if child not in index:
                index[child] = len(order)
                order.append(child)
                variable = getattr(child, "variable", None)
                if isinstance(variable, torch.Tensor):
                    nodes.append(GraphNode(label=_leaf_label(variable, by_id), kind="leaf"))
                else:
                    nodes.append(GraphNode(label=type(child).__name__, kind="op"))
            nodes[i].inputs.append(index[child])
        i += 1
    if out_name is not None:
        nodes[0].label = f"{out_name} = {nodes[0].label}"

    # depth = longest path from the output, so every edge points from left to right
    for _ in range(len(nodes)):
        changed = False
        for node in nodes:
            for k in node.inputs:
                if nodes[k].depth < node.depth + 1:
                    nodes[k].depth = node.depth + 1
                    changed = True
        if not changed:
            break
    return nodes


def draw_graph(output: torch.Tensor, names: Mapping[str, torch.Tensor] | None = None,
               ax: plt.Axes | None = None, title: str | None = None) -> Figure:
    """Draw the backward graph of ``output``: leaves (blue) on the left, operations (orange)
    in the middle, the output's ``grad_fn`` (green) on the right. Arrows follow the forward
    computation; ``backward()`` walks them from right to left."""
    nodes = graph_nodes(output, names)
    max_depth = max(n.depth for n in nodes)
    columns: dict[int, list[int]] = {}
    for j, n in enumerate(nodes):
        columns.setdefault(n.depth, []).append(j)
    tallest = max(len(c) for c in columns.values())
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(3.0, 2.0 * (max_depth + 1)), max(1.6, 0.9 * tallest + 0.6)))
    else:
        fig = ax.figure
    pos: dict[int, tuple[float, float]] = {}
    for depth, members in columns.items():
        x = float(max_depth - depth)
        for r, j in enumerate(members):
            pos[j] = (x, (len(members) - 1) / 2 - r)
    boxes = {}
    for j, n in enumerate(nodes):
        boxes[j] = ax.text(*pos[j], n.label, ha="center", va="center", fontsize=9, family="monospace",
                           bbox=dict(boxstyle="round,pad=0.4", fc=_COLORS[n.kind], ec="#777"), zorder=3)
    long_edges = 0
    for j, n in enumerate(nodes):
        for nth, k in enumerate(n.inputs):
            span = nodes[k].depth - n.depth
            if n.inputs.count(k) > 1:  # x * x: the same input twice, two bent arrows
                bend = 0.25 if n.inputs[:nth].count(k) == 0 else -0.25
            elif span > 1:  # skips columns: arc around the boxes in between, alternating sides
                long_edges += 1
                bend = 0.4 / span**0.5 * (1 if long_edges % 2 else -1)
            else:
                bend = 0.0
            # from the right edge of the input's box to the left edge of this node's box
            ax.annotate("", xy=(0.0, 0.5), xycoords=boxes[j], xytext=(1.0, 0.5), textcoords=boxes[k],
                        arrowprops=dict(arrowstyle="-|>", color="#555", lw=1.2, shrinkA=4, shrinkB=4,
                                        connectionstyle=f"arc3,rad={bend}"), zorder=2)
    ax.set_xlim(-0.7, max_depth + 0.7)
    room = 0.1 + (0.35 if long_edges else 0.0)  # arcs bulge up and down
    ax.set_ylim(-tallest / 2 - room, tallest / 2 + room)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
