"""Exercises of 06_gpu_amp_ddp: moving batches, a bf16 autocast step, gradient checkpointing,
sharding like DistributedSampler, and what DDP's all-reduce computes.

Every check runs on a CPU. Moving to a device is checked with the ``meta`` device (it exists on
every machine), so a tensor left behind is visible without a GPU.
"""

from __future__ import annotations

import copy
import math
import warnings
from typing import NamedTuple

import torch
from torch import nn
from torch.nn.utils import skip_init
from torch.utils.checkpoint import checkpoint

from course_utils.grading import Case, Compare, Exercise, Incorrect, Mistake, Rand, register

LESSON = "06_gpu_amp_ddp"

META = torch.device("meta")


def _fill(module: nn.Module, r: Rand, scale: float = 0.5) -> nn.Module:
    """Random weights from ``r`` (never from the global RNG)."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(r.randn(*p.shape) * scale)
    return module


def _mlp(r: Rand, d_in: int, hidden: int, d_out: int) -> nn.Sequential:
    return _fill(nn.Sequential(skip_init(nn.Linear, d_in, hidden), nn.ReLU(),
                               skip_init(nn.Linear, hidden, d_out)), r)


# =============================================================================== to_device
def to_device(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a namedtuple: fields by position
        return type(batch)(*(to_device(item, device) for item in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(item, device) for item in batch)
    return batch


def _random_leaf(r: Rand):
    kind = r.choice(["float", "float", "long", "bool", "str", "int", "double", "namedtuple"])
    n = r.integer(1, 4)
    if kind == "float":
        return r.randn(n, r.integer(1, 3))
    if kind == "double":
        return r.randn(n, dtype=torch.float64)
    if kind == "namedtuple":
        return Batch(r.randn(n, 2), r.randint(0, 3, (n,)))
    if kind == "long":
        return r.randint(0, 10, (n,))
    if kind == "bool":
        return r.rand(n) > 0.5
    if kind == "str":
        return r.choice(["img_001.png", "cat", "a sentence"])
    return r.integer(0, 99)


def _random_batch(r: Rand, depth: int = 0):
    if depth >= 2 or r.uniform(0, 1) < 0.3:
        return _random_leaf(r)
    kind = r.choice(["tuple", "list", "dict"])
    items = [_random_batch(r, depth + 1) for _ in range(r.integer(1, 3))]
    if kind == "dict":
        keys = ["inputs", "labels", "mask", "meta", "ids"]
        return {keys[i]: v for i, v in enumerate(items)}
    return tuple(items) if kind == "tuple" else items


def _to_device_cases(r: Rand) -> Case:
    X, y = r.randn(r.integer(1, 5), r.integer(2, 6)), r.randint(0, 3, (r.integer(1, 5),))
    # always some nesting, plus a random extra part
    batch = r.choice([
        lambda: (X, y),
        lambda: {"inputs": X, "targets": {"labels": y, "extra": _random_batch(r)}},
        lambda: [(X, y), {"ids": y, "names": "batch"}],
        lambda: (X, [y, _random_batch(r)], {"meta": _random_batch(r)}),
    ])()
    return Case((batch,))


def _check_moved(got, original, path: str, device_type: str = META.type) -> None:
    if isinstance(original, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            raise Incorrect("changed_structure", f"`{path}` should be a tensor, but it is {type(got).__name__}.")
        if got.device.type != device_type:
            raise Incorrect(
                "not_moved",
                f"`{path}` is still on `{got.device}` after moving the batch to `meta`. Tensors inside "
                "nested tuples, lists and dicts must be moved too: call `to_device` again on every "
                "element of a container (recursion).",
            )
        if type(got) is not type(original):
            raise Incorrect("changed_structure", f"`{path}` should be a plain {type(original).__name__}, but it is "
                            f"a {type(got).__name__}.")
        if got.requires_grad != original.requires_grad:
            raise Incorrect(
                "changed_flags",
                f"`{path}` has requires_grad={got.requires_grad}, but the tensor in the batch had "
                f"requires_grad={original.requires_grad}. Moving changes only the device: `.to(device)` alone.",
            )
        if got.dtype != original.dtype:
            raise Incorrect(
                "changed_dtype",
                f"`{path}` changed dtype from {str(original.dtype).replace('torch.', '')} to "
                f"{str(got.dtype).replace('torch.', '')}. Moving must not convert: class labels must stay "
                "int64 for cross-entropy. Use `.to(device)` alone.",
            )
        if got.shape != original.shape:
            raise Incorrect("changed_structure", f"`{path}` changed shape from {tuple(original.shape)} to {tuple(got.shape)}.")
        return
    if isinstance(original, dict):
        if not isinstance(got, dict):
            raise Incorrect("changed_container_type",
                            f"`{path}` was a dict and came back as a {type(got).__name__}. Build a dict for a dict.")
        if set(got) != set(original):
            missing = sorted(map(str, set(original) - set(got)))
            raise Incorrect(
                "dropped_entries",
                f"`{path}` lost the keys {missing}" + (" (and gained others)" if set(got) - set(original) else "")
                + ". Entries that are not tensors (names, ids, numbers) must come back unchanged, not be left out.",
            )
        for key in original:
            _check_moved(got[key], original[key], f"{path}[{key!r}]", device_type)
        return
    if isinstance(original, (list, tuple)):
        if type(got) is not type(original):
            raise Incorrect(
                "changed_container_type",
                f"`{path}` was a {type(original).__name__} and came back as a {type(got).__name__}. Keep "
                "the container type: `type(batch)(... for item in batch)` rebuilds a tuple as a tuple.",
            )
        if len(got) != len(original):
            raise Incorrect(
                "dropped_entries",
                f"`{path}` has {len(got)} items instead of {len(original)}. Entries that are not tensors "
                "must come back unchanged, not be left out.",
            )
        for i, (g, o) in enumerate(zip(got, original)):
            _check_moved(g, o, f"{path}[{i}]", device_type)
        return
    if type(got) is not type(original) or got != original:
        raise Incorrect("changed_non_tensor",
                        f"`{path}` should be returned unchanged (it is not a tensor), but it is {got!r}.")


def _contains_tensor_on(obj, device_type: str) -> bool:
    if isinstance(obj, torch.Tensor):
        return obj.device.type == device_type
    if isinstance(obj, dict):
        return any(_contains_tensor_on(v, device_type) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_contains_tensor_on(v, device_type) for v in obj)
    return False


def _run_to_device(answer, case: Case):
    batch = case.args[0]
    given = copy.deepcopy(batch)
    moved = answer(given, META)
    if moved is None:
        raise Incorrect("returned_none", "`to_device` returned None. Did you forget a `return` statement?")
    if _contains_tensor_on(given, META.type):
        raise Incorrect(
            "mutated_batch",
            "Your function changed the batch it was given (it now holds moved tensors). Build and return "
            "a new container instead of assigning into the old one: the caller may still need the original.",
        )
    _check_moved(moved, batch, "result")
    on_cpu = answer(batch, torch.device("cpu"))
    _check_moved(on_cpu, batch, "result", "cpu")  # the same structure for every device
    return on_cpu


def _mistake_shallow(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
    return type(batch)(v.to(device) if isinstance(v, torch.Tensor) else v for v in batch)


def _mistake_list(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _mistake_list(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [_mistake_list(v, device) for v in batch]
    return batch


def _mistake_float(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device, torch.float32)
    if isinstance(batch, dict):
        return {k: _mistake_float(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_mistake_float(v, device) for v in batch)
    return batch


def _mistake_in_place(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, list):
        for i, v in enumerate(batch):
            batch[i] = _mistake_in_place(v, device)
        return batch
    if isinstance(batch, dict):
        for k, v in batch.items():
            batch[k] = _mistake_in_place(v, device)
        return batch
    if isinstance(batch, tuple):
        return tuple(_mistake_in_place(v, device) for v in batch)
    return batch


def _mistake_namedtuple(batch, device):
    """`type(batch)(generator)`: right for tuples and lists, raises for a namedtuple."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _mistake_namedtuple(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_mistake_namedtuple(v, device) for v in batch)
    return batch


def _mistake_drop(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _mistake_drop(v, device) for k, v in batch.items() if isinstance(v, (torch.Tensor, dict, list, tuple))}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_mistake_drop(v, device) for v in batch if isinstance(v, (torch.Tensor, dict, list, tuple)))
    return batch


_X3 = torch.arange(6.0).reshape(3, 2)
_Y3 = torch.tensor([0, 2, 1])


class Batch(NamedTuple):
    """A namedtuple batch, as many datasets return (``batch.x``, ``batch.y``)."""

    x: torch.Tensor
    y: torch.Tensor
    name: str = "batch"

register(Exercise(
    lesson=LESSON, name="to_device", title="Move a nested batch to a device, keeping its structure",
    reference=to_device,
    cases=_to_device_cases,
    edge_cases=[
        Case(((_X3, _Y3),), label="a tuple (X, y)"),
        Case(([{"inputs": _X3, "targets": {"labels": _Y3}}, "file_7.png", 3],),
             label="a list holding a nested dict, a name and a number"),
        Case(({"pair": (_X3, [_Y3]), "id": 17},), label="a dict holding a tuple holding a list"),
        Case((Batch(_X3, _Y3),), label="a namedtuple Batch(x, y, name)"),
        Case(([Batch(_X3.double(), _Y3), {"half": _X3.half(), "bf16": _X3.bfloat16(), "mask": _Y3 > 0}],),
             label="float64, float16, bfloat16 and bool tensors, one inside a namedtuple"),
        Case((((), [], {}, (torch.tensor(3.5),), {0: _Y3, ("a", 1): None}),),
             label="empty containers, a 0-dim tensor, non-string dict keys and None"),
    ],
    run=_run_to_device,
    mistakes=[
        Mistake("not_moved", "A tensor inside a nested container stayed behind. Call `to_device` "
                "recursively on every element of a tuple, list or dict.", _mistake_shallow, match_output=False),
        Mistake("changed_container_type", "A tuple came back as a list. Rebuild each container with its own "
                "type: `type(batch)(to_device(item, device) for item in batch)`.", _mistake_list, match_output=False),
        Mistake("changed_dtype", "Moving converted the dtype (int64 labels became float32). `.to(device)` "
                "alone moves without converting.", _mistake_float, match_output=False),
        Mistake("mutated_batch", "Your function assigned moved tensors into the batch it was given. Return a "
                "new container and leave the original alone.", _mistake_in_place, match_output=False),
        Mistake("dropped_entries", "Entries that are not tensors (names, ids, numbers) disappeared. Return "
                "them unchanged.", _mistake_drop, match_output=False),
        Mistake("namedtuple_from_generator", "A namedtuple cannot be built from one generator: "
                "`Batch(gen)` fills only the first field. For a namedtuple (`hasattr(batch, '_fields')`) pass "
                "the moved items as separate arguments: `type(batch)(*(to_device(item, device) for item in "
                "batch))`.", _mistake_namedtuple),
    ],
    hints=[
        "Handle the cases one by one: a tensor (move it), a dict (a new dict with every value moved), a list "
        "or tuple (a new one with every item moved), anything else (return it as it is).",
        "For containers, call `to_device` itself on each element: that is what moves tensors nested at any depth.",
        "`type(batch)(to_device(item, device) for item in batch)` rebuilds a tuple as a tuple and a list as a "
        "list; `{key: to_device(value, device) for key, value in batch.items()}` does dicts.",
        "A namedtuple (`hasattr(batch, '_fields')`) is built from its fields: "
        "`type(batch)(*(to_device(item, device) for item in batch))`.",
    ],
))


# =============================================================================== amp_train_step
def amp_train_step(model, X, y, loss_fn, optimizer):
    optimizer.zero_grad()
    with torch.autocast(device_type=X.device.type, dtype=torch.bfloat16):
        loss = loss_fn(model(X), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def _amp_cases(r: Rand) -> Case:
    d, h, c, n = r.integer(3, 12), r.integer(4, 24), r.integer(2, 5), r.integer(4, 24)
    model = _mlp(r, d, h, c)
    stale = [r.randn(*p.shape) for p in model.parameters()]
    return Case((model, r.randn(n, d), r.randint(0, c, (n,))), {"stale": stale, "lr": r.uniform(0.2, 0.8)})


def _run_amp(answer, case: Case):
    model, X, y = case.args
    for p, g in zip(model.parameters(), case.kwargs["stale"]):
        p.grad = g.clone()  # left over from an earlier step: zero_grad must clear it
    optimizer = torch.optim.SGD(model.parameters(), lr=case.kwargs["lr"])
    seen = []
    handle = model[0].register_forward_hook(lambda mod, inp, out: seen.append(out.dtype))
    # autocast's default dtype is bfloat16 on a CPU but float16 on CUDA: during the step the CPU
    # default is float16 too, so an autocast without `dtype=` shows up as float16 here.
    default = torch.get_autocast_dtype(X.device.type)
    torch.set_autocast_dtype(X.device.type, torch.float16)
    try:
        loss = answer(model, X, y, nn.CrossEntropyLoss(), optimizer)
    finally:
        torch.set_autocast_dtype(X.device.type, default)
        handle.remove()
    params = [p.detach().clone() for p in model.parameters()]
    if any(p.dtype != torch.float32 for p in params):
        raise Incorrect(
            "cast_model",
            "Your step converted the model's parameters to a low-precision dtype. With autocast the "
            "parameters (the master weights the optimizer updates) stay float32; only the operations "
            "inside `torch.autocast(...)` compute in bfloat16.",
        )
    if seen and seen[0] == torch.float16:
        raise Incorrect(
            "float16_autocast",
            "The forward pass ran in float16. Pass `dtype=torch.bfloat16` to `torch.autocast` (without "
            "`dtype=`, autocast uses the device's default, which is float16 on CUDA): bfloat16 has "
            "float32's range, so no GradScaler is needed; float16 gradients can underflow to zero without one.",
        )
    if seen and seen[0] == torch.float32:
        raise Incorrect(
            "no_autocast",
            "The forward pass ran in float32: it was not inside `torch.autocast(device_type=..., "
            "dtype=torch.bfloat16)`. Put the model call and the loss inside that `with` block.",
        )
    return loss, params


def _probe_device_type(answer, r: Rand) -> None:
    """Run the step on `meta` tensors with `torch.autocast` replaced by a recorder: the
    `device_type` the answer asks for must be the batch's (`X.device.type`), not a constant."""
    import contextlib

    seen: list[str] = []
    real = torch.autocast

    class Recorder(contextlib.nullcontext):
        def __init__(self, device_type=None, *args, **kwargs):
            seen.append(str(device_type))
            super().__init__()

    model = _mlp(r, 3, 4, 2).to(META)
    X, y = torch.zeros(4, 3, device=META), torch.zeros(4, dtype=torch.long, device=META)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.autocast = torch.amp.autocast = Recorder  # type: ignore[misc]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            answer(model, X, y, nn.CrossEntropyLoss(), optimizer)
    except Exception:  # noqa: BLE001 - `.item()` of a meta tensor fails: we only want the device_type
        pass
    finally:
        torch.autocast = torch.amp.autocast = real  # type: ignore[misc]
    if seen and seen[0] != META.type:
        raise Incorrect(
            "hard_coded_device",
            f"Your step asked for `torch.autocast({seen[0]!r}, ...)` for a batch on `{META.type}`: the text says "
            "`device_type=X.device.type`. With a constant, the same code on a GPU batch would not autocast "
            "at all.",
        )


def _mistake_cpu_autocast(model, X, y, loss_fn, optimizer):
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = loss_fn(model(X), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def _autocast_step(model, X, y, loss_fn, optimizer, dtype, zero=True):
    if zero:
        optimizer.zero_grad()
    with torch.autocast(device_type=X.device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
        loss = loss_fn(model(X), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def _mistake_loss_outside(model, X, y, loss_fn, optimizer):
    optimizer.zero_grad()
    with torch.autocast(device_type=X.device.type, dtype=torch.bfloat16):
        logits = model(X)
    loss = loss_fn(logits, y)  # outside autocast: cross-entropy of bfloat16 logits runs in bfloat16
    loss.backward()
    optimizer.step()
    return loss.item()


def _mistake_cast_model(model, X, y, loss_fn, optimizer):
    model.bfloat16()
    optimizer.zero_grad()
    loss = loss_fn(model(X.bfloat16()), y)
    loss.backward()
    optimizer.step()
    return loss.item()


register(Exercise(
    lesson=LESSON, name="amp_train_step", title="One training step with bfloat16 autocast",
    reference=amp_train_step,
    cases=_amp_cases,
    n_random=4,
    timeout=10.0,
    run=_run_amp,
    probes=[_probe_device_type],
    compare=Compare(rtol=1e-3, atol=1e-4),
    mistakes=[
        Mistake("hard_coded_device", "Use `device_type=X.device.type`, not a constant such as 'cpu': the "
                "same step must autocast on whatever device the batch is.", _mistake_cpu_autocast,
                match_output=False),
        Mistake("no_autocast", "The forward pass ran in float32. Wrap the model call and the loss in "
                "`with torch.autocast(device_type=X.device.type, dtype=torch.bfloat16):`.",
                lambda model, X, y, loss_fn, opt: _autocast_step(model, X, y, loss_fn, opt, None),
                match_output=False),
        Mistake("cast_model", "Converting the model with `.bfloat16()` is not mixed precision: the weights "
                "lose precision and small updates vanish. Keep float32 weights; use autocast.",
                _mistake_cast_model, match_output=False),
        Mistake("float16_autocast", "float16 autocast needs a GradScaler; on the CPU use bfloat16. (Without "
                "`dtype=`, autocast uses the device's default, which is float16 on CUDA.)",
                lambda model, X, y, loss_fn, opt: _autocast_step(model, X, y, loss_fn, opt, torch.float16),
                match_output=False),
        Mistake("loss_outside_autocast", "Only the model call was inside autocast, so cross-entropy ran on "
                "bfloat16 logits in bfloat16 (autocast would have run it in float32). Put the loss inside the "
                "`with torch.autocast(...)` block too.", _mistake_loss_outside),
        Mistake("forgot_zero_grad", "Your step used gradients left over from an earlier step: call "
                "`optimizer.zero_grad()` before `backward()`, otherwise gradients add up across steps.",
                lambda model, X, y, loss_fn, opt: _autocast_step(model, X, y, loss_fn, opt, torch.bfloat16,
                                                                zero=False)),
    ],
    hints=[
        "The five steps are the usual ones: zero_grad, forward, loss, backward, step. Only the forward pass "
        "and the loss go inside `with torch.autocast(device_type=X.device.type, dtype=torch.bfloat16):`.",
        "`backward()` and `optimizer.step()` come after the `with` block; the parameters stay float32.",
        "Return `loss.item()`, a Python float.",
    ],
))




# =============================================================================== checkpointed_forward
def checkpointed_forward(blocks, x):
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=False)
    return x


def _blocks(r: Rand, n: int, width: int) -> nn.ModuleList:
    return nn.ModuleList(_fill(nn.Sequential(skip_init(nn.Linear, width, width), nn.Tanh()), r, 0.4)
                         for _ in range(n))


def _ckpt_cases(r: Rand) -> Case:
    width = r.integer(8, 24)
    x = r.randn(r.integer(4, 16), width)
    if r.integer(0, 1):
        x.requires_grad_(True)
    return Case((_blocks(r, r.integer(4, 6), width), x))


def _saved_bytes(fn):
    total = [0]

    def pack(t):
        total[0] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return total[0], out


def _run_ckpt(answer, case: Case):
    blocks, x = case.args
    # Which block's first layer runs when: checkpointing every block on its own recomputes each
    # block once during backward, the last block first. (The layer, not the block, is watched so
    # that `block.forward(x)` is seen too.)
    calls: list[int] = []
    handles = [block[0].register_forward_pre_hook(lambda mod, args, i=i: calls.append(i))
               for i, block in enumerate(blocks)]
    try:
        return _run_ckpt_watched(answer, blocks, x, calls)
    finally:
        for handle in handles:
            handle.remove()


def _run_ckpt_watched(answer, blocks, x, calls: list[int]):
    x_flag = x.requires_grad
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        used, out = _saved_bytes(lambda: answer(blocks, x))
    if x.requires_grad != x_flag:
        raise Incorrect(
            "changed_input_flag",
            f"Your function changed `x.requires_grad` of the caller's tensor (from {x_flag} to "
            f"{x.requires_grad}), e.g. with `x.requires_grad_()`. With `use_reentrant=False` checkpointing "
            "needs no such trick: leave the input as it is.",
        )
    if not isinstance(out, torch.Tensor) or out.shape != x.shape or out.device != x.device:
        return out, []
    params = list(blocks.parameters())
    if not out.requires_grad:
        if any("None of the inputs have requires_grad" in str(w.message) for w in caught):
            raise Incorrect(
                "reentrant_checkpoint",
                "No gradient reaches the blocks' parameters: `checkpoint` ran in its old *reentrant* mode "
                "(the default when `use_reentrant` is not given, or `use_reentrant=True`), which drops the "
                "graph when the input does not require grad. Pass `use_reentrant=False`.",
            )
        raise Incorrect(
            "no_grad_forward",
            "Your output is not connected to the autograd graph, so training could not compute any "
            "gradient. `torch.no_grad()` saves memory only where no gradients are needed; gradient "
            "checkpointing keeps the graph and recomputes the activations during backward.",
        )
    if _uses_reentrant(out):
        raise Incorrect(
            "reentrant_checkpoint",
            "Your forward pass used `checkpoint` in its old *reentrant* mode (`use_reentrant=True`, the "
            "default when `use_reentrant` is not given). It drops the graph when a block's input does not "
            "require grad, and it does not work with `torch.autograd.grad`. Pass `use_reentrant=False`.",
        )
    upstream = torch.ones_like(out) / out.numel() + out.detach() * 0.01
    inputs = params + ([x] if x.requires_grad else [])
    n_forward = len(calls)
    grads = torch.autograd.grad(out, inputs, upstream, allow_unused=True)
    recomputed = calls[n_forward:]
    if any(g is None for g in grads):
        raise Incorrect(
            "cut_between_blocks",
            "Gradients reach only some of the blocks: the graph is cut between them (`.detach()`, "
            "`.data` or `torch.no_grad()` around part of the loop). Pass each block's output straight "
            "to the next `checkpoint` call.",
        )
    # What a plain forward would keep, and what checkpointing every block keeps (each block's input).
    plain, _ = _saved_bytes(lambda: _plain_forward(blocks, x.detach().requires_grad_(x.requires_grad)))
    ckpt = len(blocks) * x.numel() * x.element_size()
    if used > (plain + ckpt) / 2:
        raise Incorrect(
            "not_checkpointed",
            f"Your forward pass kept {used} bytes of activations for backward; checkpointing every block "
            f"keeps only each block's input ({ckpt} bytes here). Wrap each block call: "
            "`x = checkpoint(block, x, use_reentrant=False)`.",
        )
    n = len(blocks)
    missing = [i for i in range(n) if i not in recomputed]
    if missing and n > 1 and recomputed.count(n - 1) == n:
        raise Incorrect(
            "late_binding_closure",
            f"During backward the last block was recomputed {n} times and the others never: each "
            "checkpoint called a `lambda` that looks up the loop variable when it runs, and by then the "
            "loop has ended, so every recompute used the last block (Python's late binding). The forward "
            "was right but the gradients are wrong. Pass the block itself: `checkpoint(block, x, "
            "use_reentrant=False)` (or bind it: `lambda t, b=block: b(t)`).",
        )
    if missing:
        raise Incorrect(
            "not_checkpointed",
            f"During backward, block(s) {missing} of {n} were not recomputed, so they were not checkpointed "
            "(their activations were kept, or stored some other way). `checkpoint_sequential` runs its last "
            "segment normally. Wrap every block call: `x = checkpoint(block, x, use_reentrant=False)`.",
        )
    if recomputed != list(range(n - 1, -1, -1)):
        raise Incorrect(
            "coarse_checkpoint",
            "Several blocks share one checkpoint, so backward recomputes them together and needs all "
            "their activations at once. Checkpoint each block on its own: "
            "`x = checkpoint(block, x, use_reentrant=False)` inside the loop.",
        )
    return out.detach(), [g.detach() for g in grads]


def _uses_reentrant(out: torch.Tensor) -> bool:
    """Whether the graph behind ``out`` holds a reentrant checkpoint node."""
    seen, todo = set(), [out.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if type(fn).__name__ == "CheckpointFunctionBackward":
            return True
        todo.extend(next_fn for next_fn, _ in fn.next_functions)
    return False


def _plain_forward(blocks, x):
    for block in blocks:
        x = block(x)
    return x


def _mistake_reentrant(blocks, x):
    for block in blocks:
        x = checkpoint(block, x)  # use_reentrant not given: the old reentrant mode
    return x


def _mistake_no_grad(blocks, x):
    with torch.no_grad():
        for block in blocks:
            x = block(x)
    return x


def _mistake_one_segment(blocks, x):
    return checkpoint(_plain_forward, blocks, x, use_reentrant=False)  # one checkpoint for all blocks


def _mistake_detach(blocks, x):
    for i, block in enumerate(blocks):
        if i > 0:
            x = x.detach()  # "to save memory": cuts the graph between blocks
        x = checkpoint(block, x, use_reentrant=False)
    return x


def _fixed_ckpt_case(requires_grad: bool) -> Case:
    r = Rand(606)
    x = r.randn(6, 10).requires_grad_(requires_grad)
    return Case((_blocks(r, 4, 10), x), label=f"4 blocks, input{'' if requires_grad else ' not'} requiring grad")


register(Exercise(
    lesson=LESSON, name="checkpointed_forward", title="Gradient checkpointing: recompute instead of store",
    reference=checkpointed_forward,
    cases=_ckpt_cases,
    edge_cases=[_fixed_ckpt_case(False), _fixed_ckpt_case(True)],
    n_random=4,
    timeout=10.0,
    run=_run_ckpt,
    compare=Compare(rtol=1e-5, atol=1e-6),
    mistakes=[
        Mistake("not_checkpointed", "The blocks ran normally, so every activation was stored. Wrap each "
                "block call in `checkpoint(block, x, use_reentrant=False)`.", _plain_forward, match_output=False),
        Mistake("reentrant_checkpoint", "The reentrant checkpoint (the default without `use_reentrant=`) "
                "gives no parameter gradients when the input does not require grad. Pass `use_reentrant=False`.",
                _mistake_reentrant, match_output=False),
        Mistake("no_grad_forward", "`torch.no_grad()` throws the graph away, so nothing can be trained. "
                "Checkpointing keeps the graph and recomputes activations.", _mistake_no_grad, match_output=False),
        Mistake("cut_between_blocks", "`.detach()` between blocks stops gradients from reaching the earlier "
                "blocks.", _mistake_detach, match_output=False),
        Mistake("coarse_checkpoint", "One checkpoint around all the blocks recomputes them all at once in "
                "backward: checkpoint each block on its own.", _mistake_one_segment, match_output=False),
    ],
    hints=[
        "`from torch.utils.checkpoint import checkpoint`; `checkpoint(fn, *args, use_reentrant=False)` runs "
        "`fn(*args)` without keeping its intermediate activations, and reruns it during backward.",
        "Loop over the blocks and replace `x = block(x)` by `x = checkpoint(block, x, use_reentrant=False)`.",
    ],
))


# =============================================================================== shard_indices
def shard_indices(n, world_size, rank, epoch, shuffle=True, seed=0):
    if shuffle:
        g = torch.Generator().manual_seed(seed + epoch)
        order = torch.randperm(n, generator=g).tolist()
    else:
        order = list(range(n))
    total = math.ceil(n / world_size) * world_size       # every rank gets the same number
    if n:                                                  # (an empty dataset has nothing to pad)
        order = (order * math.ceil(total / n))[:total]     # pad by repeating from the start
    return order[rank:total:world_size]                    # deal them out round-robin


def _shard_cases(r: Rand) -> Case:
    world_size = r.integer(1, 5)
    return Case((r.integer(1, 30), world_size, r.integer(0, world_size - 1), r.integer(0, 6)),
                {"shuffle": r.choice([True, True, False]), "seed": r.integer(0, 1000)})


def _mistake_blocks(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist() if shuffle else list(range(n))
    per_rank = math.ceil(n / world_size)
    if n:  # (a division by n = 0 would be evidence of nothing in particular: keep it out of the example)
        order = (order * math.ceil(per_rank * world_size / n))[:per_rank * world_size]
    return order[rank * per_rank:(rank + 1) * per_rank]


def _mistake_no_padding(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist() if shuffle else list(range(n))
    return order[rank::world_size]


def _mistake_no_epoch(n, world_size, rank, epoch, shuffle=True, seed=0):
    return shard_indices(n, world_size, rank, 0, shuffle, seed)


def _mistake_rank_seed(n, world_size, rank, epoch, shuffle=True, seed=0):
    return shard_indices(n, world_size, rank, epoch + rank, shuffle, seed)


def _mistake_pad_once(n, world_size, rank, epoch, shuffle=True, seed=0):
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist() if shuffle else list(range(n))
    total = math.ceil(n / world_size) * world_size
    order = order + order[:total - n]  # too short when more than n items are needed to pad
    return order[rank::world_size]


def _mistake_global_seed(n, world_size, rank, epoch, shuffle=True, seed=0):
    if shuffle:
        torch.manual_seed(seed + epoch)  # the same order, but it resets the training's random stream
        order = torch.randperm(n).tolist()
    else:
        order = list(range(n))
    total = math.ceil(n / world_size) * world_size
    return (order * math.ceil(total / n))[:total][rank::world_size]


def _probe_global_rng(answer, r: Rand) -> None:
    """Building the order must not touch the global random stream (that drives dropout,
    augmentation and the model's initialisation in the training that calls it)."""
    world_size = r.integer(2, 4)
    before = torch.get_rng_state()
    answer(r.integer(5, 20), world_size, r.integer(0, world_size - 1), r.integer(1, 6), shuffle=True,
           seed=r.integer(0, 1000))
    if not torch.equal(before, torch.get_rng_state()):
        raise Incorrect(
            "global_rng",
            "Your function changed the global random state (`torch.manual_seed`, or drawing from the "
            "global generator). Every call would then reset the random stream of the training that uses "
            "it. Draw the permutation from its own generator: "
            "`torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch))`.",
        )


register(Exercise(
    lesson=LESSON, name="shard_indices", title="Give each rank its share of the data, like DistributedSampler",
    reference=shard_indices,
    cases=_shard_cases,
    edge_cases=[
        Case((10, 3, 2, 1), {"shuffle": True, "seed": 0}, label="10 items, 3 ranks, rank 2, epoch 1", show_inputs=True),
        Case((2, 4, 3, 0), {"shuffle": False, "seed": 0}, label="2 items, 4 ranks, rank 3, no shuffle", show_inputs=True),
        Case((8, 2, 1, 3), {"shuffle": True, "seed": 5}, label="8 items, 2 ranks, rank 1, epoch 3", show_inputs=True),
        Case((2, 5, 4, 2), {"shuffle": True, "seed": 3}, label="2 items, 5 ranks, rank 4, epoch 2 (more padding "
             "than items)", show_inputs=True),
        # DistributedSampler over an empty dataset yields nothing (no division by n = 0)
        Case((0, 2, 1, 0), {"shuffle": True, "seed": 0}, label="an empty dataset (n = 0), 2 ranks, rank 1",
             show_inputs=True),
    ],
    n_random=20,
    probes=[_probe_global_rng],
    mistakes=[
        Mistake("contiguous_blocks", "You gave each rank a contiguous block. DistributedSampler deals the "
                "(shuffled, padded) order round-robin: rank r takes positions r, r + world_size, ... "
                "(`order[rank::world_size]`).", _mistake_blocks),
        Mistake("no_padding", "Your rank got fewer items than DistributedSampler gives it. It pads the order "
                "by repeating items from its start until the length is a multiple of world_size (round up "
                "with `math.ceil`, do not drop the tail), so every rank gets the same number of items; "
                "otherwise one rank waits forever in the all-reduce of a step the others never take.",
                _mistake_no_padding),
        Mistake("ignores_epoch", "The shuffle is the same every epoch. Seed the permutation with "
                "`seed + epoch` (that is what `sampler.set_epoch(epoch)` changes).", _mistake_no_epoch),
        Mistake("rank_dependent_shuffle", "Each rank shuffled differently, so ranks overlap and miss items. "
                "All ranks must build the same permutation (seeded by `seed + epoch` only) and then take "
                "different positions of it.", _mistake_rank_seed),
        Mistake("global_rng", "Seeding the global generator (`torch.manual_seed`) resets the training's "
                "random stream on every call. Use `generator=torch.Generator().manual_seed(seed + epoch)`.",
                _mistake_global_seed, match_output=False),
    ],
    hints=[
        "Three steps: (1) the order: `torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch))` "
        "when shuffling, else `range(n)`; (2) pad it to a multiple of world_size; (3) deal it out.",
        "Padding: `total = math.ceil(n / world_size) * world_size`, then repeat the order from its start until "
        "it has `total` items: `(order * math.ceil(total / n))[:total]` (when `n` is 0 there is nothing to pad).",
        "Dealing out round-robin: `order[rank:total:world_size]`. Return a list of ints (`.tolist()`).",
    ],
))


# =============================================================================== data_parallel_grads
def data_parallel_grads(model, loss_fn, X, y, world_size):
    summed = None
    for X_rank, y_rank in zip(X.chunk(world_size), y.chunk(world_size)):
        replica = copy.deepcopy(model)              # every rank holds its own copy of the model
        loss = loss_fn(replica(X_rank), y_rank)
        grads = torch.autograd.grad(loss, list(replica.parameters()))
        summed = list(grads) if summed is None else [s + g for s, g in zip(summed, grads)]
    return [s / world_size for s in summed]         # all_reduce(SUM), then divide: the average


def _dp_cases(r: Rand) -> Case:
    world_size = r.integer(1, 4)
    n = world_size * r.integer(2, 6)
    d, c = r.integer(3, 8), r.integer(2, 5)
    return Case((_mlp(r, d, r.integer(4, 12), c), nn.CrossEntropyLoss(), r.randn(n, d),
                 r.randint(0, c, (n,)), world_size))


def _run_dp(answer, case: Case):
    model, loss_fn, X, y, world_size = case.args
    before = [p.detach().clone() for p in model.parameters()]
    batch_sizes: list[int] = []
    # on the first layer (Sequential calls it positionally, also for `model(input=X)` or
    # `model.forward(X)`); the hook is copied by deepcopy into every replica
    replica: list[int] = [0]  # the replica (its first layer) that ran last
    backward_of: list[tuple[int, int]] = []  # (backward pass, replica) in which each shard's loss got its gradient

    def seen(mod, args):
        batch_sizes.append(len(args[0]))
        replica[0] = id(mod)

    def loss_seen(mod, args, out):
        if isinstance(out, torch.Tensor) and out.requires_grad:
            rep = replica[0]
            out.register_hook(lambda g: backward_of.append((torch._C._current_graph_task_id(), rep)))

    handles = [model[0].register_forward_pre_hook(seen)]
    if isinstance(loss_fn, nn.Module):
        handles.append(loss_fn.register_forward_hook(loss_seen))
    try:
        grads = answer(model, loss_fn, X, y, world_size)
    finally:
        for handle in handles:
            handle.remove()
    if not isinstance(grads, list):
        raise Incorrect("wrong_type", f"Return a list with one gradient tensor per parameter, not a "
                        f"{type(grads).__name__}.")
    if any(isinstance(g, torch.Tensor) and (g.requires_grad or g.grad_fn is not None) for g in grads):
        raise Incorrect("graph_kept", "Your gradients carry an autograd graph (`create_graph=True`, or "
                        "arithmetic on tensors that require grad): they keep every rank's graph alive. DDP "
                        "averages plain gradient values: use `torch.autograd.grad(...)` without "
                        "`create_graph`, or `.detach()` the result.")
    shard = len(X) // world_size
    if any(size != shard for size in batch_sizes):
        wrong = max(batch_sizes, key=lambda size: abs(size - shard))
        raise Incorrect(
            "not_sharded",
            f"Your model saw a batch of {wrong} samples, but each of the {world_size} ranks sees "
            f"exactly its own shard of {shard}. Split X and y into world_size shards with "
            "`X.chunk(world_size)` (`X.split(k)` makes pieces of k rows, not k pieces), compute each "
            "shard's gradients separately, then average them.",
        )
    if len(set(backward_of)) < len(backward_of):
        raise Incorrect(
            "averaged_losses",
            "You averaged the shards' losses and back-propagated them through one model in a single "
            "pass. The number is the same, but that is not what DDP does: each rank computes the gradients "
            "of its own shard's loss on its own copy of the model, and the *gradients* are averaged (the "
            "all-reduce). Call `torch.autograd.grad` once per shard, on that shard's replica.",
        )
    if any(p.grad is not None for p in model.parameters()) or any(
            not torch.equal(b, p.detach()) for b, p in zip(before, model.parameters())):
        raise Incorrect(
            "modified_model",
            "Your function left gradients on (or changed) the model it was given. Each rank has its own "
            "replica: work on `copy.deepcopy(model)` (or use `torch.autograd.grad`), and leave the "
            "original alone.",
        )
    return grads


def _mistake_sum(model, loss_fn, X, y, world_size):
    return [g * world_size for g in data_parallel_grads(model, loss_fn, X, y, world_size)]


def _mistake_rank0(model, loss_fn, X, y, world_size):
    replica = copy.deepcopy(model)
    loss = loss_fn(replica(X.chunk(world_size)[0]), y.chunk(world_size)[0])
    return list(torch.autograd.grad(loss, list(replica.parameters())))


def _mistake_full_batch(model, loss_fn, X, y, world_size):
    replica = copy.deepcopy(model)
    return list(torch.autograd.grad(loss_fn(replica(X), y), list(replica.parameters())))


def _mistake_in_place_model(model, loss_fn, X, y, world_size):
    total = None
    for X_rank, y_rank in zip(X.chunk(world_size), y.chunk(world_size)):
        model.zero_grad()
        loss_fn(model(X_rank), y_rank).backward()
        grads = [p.grad.clone() for p in model.parameters()]
        total = grads if total is None else [t + g for t, g in zip(total, grads)]
    return [t / world_size for t in total]


def _mistake_misaligned(model, loss_fn, X, y, world_size):
    total = None
    for rank, X_rank in enumerate(X.chunk(world_size)):
        replica = copy.deepcopy(model)
        grads = torch.autograd.grad(loss_fn(replica(X_rank), y[rank::world_size]), list(replica.parameters()))
        total = list(grads) if total is None else [t + g for t, g in zip(total, grads)]
    return [t / world_size for t in total]


def _mistake_averaged_losses(model, loss_fn, X, y, world_size):
    replica = copy.deepcopy(model)
    loss = sum(loss_fn(replica(X_rank), y_rank) for X_rank, y_rank in zip(X.chunk(world_size), y.chunk(world_size)))
    return list(torch.autograd.grad(loss / world_size, list(replica.parameters())))


def _fixed_dp_case() -> Case:
    r = Rand(66)
    return Case((_mlp(r, 4, 6, 3), nn.CrossEntropyLoss(), r.randn(8, 4), torch.tensor([0, 1, 2, 0, 1, 2, 2, 1]), 2),
                label="8 samples, 2 ranks")


register(Exercise(
    lesson=LESSON, name="data_parallel_grads", title="What DDP computes: average the ranks' gradients",
    reference=data_parallel_grads,
    cases=_dp_cases,
    edge_cases=[_fixed_dp_case()],
    n_random=5,
    timeout=10.0,
    run=_run_dp,
    compare=Compare(rtol=1e-4, atol=1e-6),
    mistakes=[
        Mistake("summed_not_averaged", "Your gradients are world_size times too large: an all-reduce SUMs, "
                "and DDP then divides by world_size. Average, do not just add.", _mistake_sum),
        Mistake("one_rank_only", "You returned one rank's gradients. Without the all-reduce every rank "
                "would step in a different direction and the replicas would drift apart: average the "
                "gradients of all shards.", _mistake_rank0),
        Mistake("not_sharded", "You computed the gradient of the whole batch at once. It is the right "
                "number, but the exercise is to get it the way DDP does: per-rank shards, then an average.",
                _mistake_full_batch, match_output=False),
        Mistake("modified_model", "Leave the model you are given unchanged: give each rank a "
                "`copy.deepcopy(model)`.", _mistake_in_place_model, match_output=False),
        Mistake("misaligned_shards", "Your X and y shards do not match: split both the same way "
                "(`X.chunk(world_size)` and `y.chunk(world_size)`).", _mistake_misaligned),
        Mistake("averaged_losses", "Average the ranks' gradients, not their losses: one gradient computation "
                "per shard, on that shard's replica.", _mistake_averaged_losses, match_output=False),
    ],
    hints=[
        "`X.chunk(world_size)` and `y.chunk(world_size)` give each rank's shard (X has a multiple of "
        "world_size rows).",
        "For each shard: a replica `copy.deepcopy(model)`, its loss, and `torch.autograd.grad(loss, "
        "list(replica.parameters()))`.",
        "Add the shards' gradients parameter by parameter, then divide by world_size: that is all_reduce "
        "with SUM followed by the division DDP does.",
    ],
))
