"""Interactive explorers for lessons. The logic lives in plain functions (tested without a
browser); the ``*_explorer`` functions only wrap them in ipywidgets."""

from __future__ import annotations

import html
from dataclasses import dataclass

import torch


def parse_shape(text: str) -> tuple[int, ...]:
    """``"3, 1"`` or ``"(3, 1)"`` -> ``(3, 1)``; ``""`` or ``"()"`` -> ``()`` (a scalar)."""
    cleaned = text.strip().strip("()[]").replace("x", ",").replace("×", ",")
    if not cleaned.strip():
        return ()
    dims = tuple(int(p) for p in cleaned.split(",") if p.strip())
    if any(d < 0 for d in dims):
        raise ValueError("sizes cannot be negative")
    return dims


@dataclass
class BroadcastReport:
    shape_a: tuple[int, ...]
    shape_b: tuple[int, ...]
    result: tuple[int, ...] | None  # None when the shapes do not broadcast
    rows: list[tuple[str, str, str, str]]  # (dim, size a, size b, outcome) aligned from the right
    torch_says: str  # the result shape PyTorch computes, or its real error message

    def text(self) -> str:
        lines = [f"{'dim':>4} {'a':>5} {'b':>5}  outcome"]
        lines += [f"{d:>4} {a:>5} {b:>5}  {o}" for d, a, b, o in self.rows]
        lines.append(f"result: {self.result}" if self.result is not None else "result: error")
        lines.append(f"PyTorch: {self.torch_says}")
        return "\n".join(lines)


def broadcast_report(shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> BroadcastReport:
    """Apply the broadcasting rules step by step and ask PyTorch for the truth.

    Rules: align the shapes on the right; missing dimensions count as 1; two sizes are
    compatible when equal or when one of them is 1 (which is stretched).
    """
    n = max(len(shape_a), len(shape_b))
    pa = (None,) * (n - len(shape_a)) + tuple(shape_a)
    pb = (None,) * (n - len(shape_b)) + tuple(shape_b)
    rows = []
    result: list[int] | None = []
    for i, (a, b) in enumerate(zip(pa, pb)):
        sa = "-" if a is None else str(a)
        sb = "-" if b is None else str(b)
        av = 1 if a is None else a
        bv = 1 if b is None else b
        if av == bv:
            outcome, size = (f"equal: {av}", av)
        elif av == 1:
            outcome, size = (f"a {'missing' if a is None else 'is 1'}: stretched to {bv}", bv)
        elif bv == 1:
            outcome, size = (f"b {'missing' if b is None else 'is 1'}: stretched to {av}", av)
        else:
            outcome, size = (f"✗ {av} vs {bv}: neither is 1", None)
        rows.append((str(i), sa, sb, outcome))
        if result is not None:
            result = None if size is None else result + [size]
    # Stride-0 views of one zero cost no memory whatever the shapes; the CPU add gives the
    # exact error a learner meets (the meta device words it differently). Huge results are
    # only shape-checked on the meta device.
    small = all(torch.Size(s).numel() <= 1_000_000 for s in (shape_a, shape_b)) and (
        result is None or torch.Size(result).numel() <= 1_000_000)
    dev = "cpu" if small else "meta"
    try:
        out = torch.zeros((), device=dev).expand(shape_a) + torch.zeros((), device=dev).expand(shape_b)
        torch_says = f"shape {tuple(out.shape)}"
    except RuntimeError as exc:
        torch_says = f"RuntimeError: {str(exc).splitlines()[0]}"
    return BroadcastReport(tuple(shape_a), tuple(shape_b), tuple(result) if result is not None else None,
                           rows, torch_says)


def _report_html(rep: BroadcastReport) -> str:
    head = "<tr><th>dim</th><th>a</th><th>b</th><th>rule</th></tr>"
    body = "".join(
        f"<tr><td>{d}</td><td>{a}</td><td>{b}</td><td style='color:{'#b3261e' if o.startswith('✗') else '#1b7f3b'}'>"
        f"{html.escape(o)}</td></tr>" for d, a, b, o in rep.rows)
    verdict = (f"<b>result shape {rep.result}</b>" if rep.result is not None
               else "<b style='color:#b3261e'>these shapes do not broadcast</b>")
    return (f"<table>{head}{body}</table><div>{verdict}</div>"
            f"<div><code>torch.empty{rep.shape_a} + torch.empty{rep.shape_b}</code> → "
            f"{html.escape(rep.torch_says)}</div>")


def broadcast_explorer(a: str = "3, 1", b: str = "4"):
    """Two shape boxes; the table shows how each dimension broadcasts, and PyTorch's verdict."""
    import ipywidgets as widgets

    box_a = widgets.Text(value=a, description="shape a", continuous_update=False)
    box_b = widgets.Text(value=b, description="shape b", continuous_update=False)
    out = widgets.HTML()

    def refresh(_=None) -> None:
        try:
            rep = broadcast_report(parse_shape(box_a.value), parse_shape(box_b.value))
            out.value = _report_html(rep)
        except ValueError as exc:
            out.value = ("<span style='color:#b3261e'>Type sizes separated by commas, "
                         f"e.g. 3, 1 ({html.escape(str(exc))})</span>")

    box_a.observe(refresh, names="value")
    box_b.observe(refresh, names="value")
    refresh()
    return widgets.VBox([widgets.HBox([box_a, box_b]), out])
