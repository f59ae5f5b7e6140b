"""first_nonfinite: the name of the first module whose output holds NaN or inf (forward hooks).

The notebook states the goal (the module where the trouble starts) on a saved incident whose
block defines its layers in one order and calls them in another; the learner decides what
"first" means (listed, started, finished) and which test. tests/test_l07_debugging.py holds that
each named wrong order or test blames another module on that incident.

Subtle: hooks fire when a module *finishes*, so a layer comes before the container holding it
(``named_modules()`` lists the container first); ``-inf`` from a log is not NaN (``isnan`` alone
names a later layer); a model's own forward can make the inf (name ``""``); children may run in
another order than they were defined; an output can be a tuple; every hook must be removed.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ._kit import LESSON, global_hooks, remove_leftover_hooks
from ._nonfinite_layers import Clean, Exp, HeadFirst, Log, LogInForward, Reciprocal, TakeFirst, WithAux

# --- reference: the solution notebook's answer (generated from solutions/07_debugging.py)
from ...answers.l07_debugging import first_nonfinite


# --- cases
def _danger(r: Rand) -> nn.Module:
    return r.choice([Log, Reciprocal])()


def _cases(r: Rand) -> Case:
    width, n = r.integer(3, 8), r.integer(4, 8)
    with torch.random.fork_rng():  # module init from the case's seed, the caller's RNG untouched
        torch.manual_seed(r.integer(0, 2**31))
        layers: list[nn.Module] = [nn.Linear(width, width)]
        for _ in range(r.integer(1, 4)):
            layers += [r.choice([nn.Tanh, nn.ReLU, nn.Identity])(), nn.Linear(width, width)]
        if r.uniform(0, 1) < 0.85:  # after a ReLU: zeros, so log gives -inf and 1/x gives inf
            at = r.integer(0, len(layers))
            layers[at:at] = [nn.ReLU(), _danger(r)]
        if r.uniform(0, 1) < 0.5:  # nest part of it: a layer finishes before its container
            cut = r.integer(1, len(layers))
            layers = [nn.Sequential(*layers[:cut]), *layers[cut:]]
        model = nn.Sequential(*layers)
    return Case((model, r.randn(n, width)))


def _fixed(label: str, build: Any, x: torch.Tensor, seed: int) -> Case:
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return Case((build(), x), label=label)


_G = torch.Generator().manual_seed(7)
EDGE_CASES = [
    _fixed("-inf from a log, then NaN after the next Linear", lambda: nn.Sequential(
        nn.Linear(4, 8), nn.ReLU(), Log(), nn.Linear(8, 3)), torch.randn(6, 4, generator=_G), 1),
    _fixed("inf (not NaN) from exp, in a nested block", lambda: nn.Sequential(
        nn.Linear(4, 4), nn.Sequential(nn.Tanh(), nn.Linear(4, 4), Exp()), nn.Tanh()),
        torch.randn(6, 4, generator=_G) * 3, 2),
    _fixed("children run in another order than they were defined", lambda: HeadFirst(5),
           torch.randn(6, 5, generator=_G), 3),
    _fixed("two problems, each hidden again by nan_to_num", lambda: nn.Sequential(
        nn.Sequential(nn.Linear(4, 4), nn.ReLU(), Log()), Clean(), nn.Linear(4, 4), nn.ReLU(), Reciprocal(), Clean()),
        torch.randn(6, 4, generator=_G), 8),
    _fixed("the model's own forward takes the log", lambda: LogInForward(4), torch.randn(6, 4, generator=_G), 4),
    _fixed("every output finite", lambda: nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2)),
           torch.randn(5, 4, generator=_G), 5),
    _fixed("a NaN already in the input", lambda: nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2)),
           torch.tensor([[1.0, float("nan"), 0.5], [0.2, 0.1, -1.0]]), 6),
    _fixed("a layer returning a tuple whose second part is inf", lambda: nn.Sequential(
        nn.Linear(4, 4), WithAux(4), TakeFirst(), nn.Linear(4, 2)),
        torch.randn(3, 4, generator=_G), 7),
]


# --- run and probes
def _describe(v: Any) -> str:
    if v is None:
        return "None (every output finite)"
    if isinstance(v, nn.Module):
        return f"a `{type(v).__name__}` module object"
    return repr(v) if isinstance(v, str) else f"{v!r} (a {type(v).__name__})"


def _watched(answer: Any, model: nn.Module, x: torch.Tensor) -> Any:
    """The answer's result; hooks left behind and replaced `forward`s are removed, then reported."""
    before, patched = global_hooks(), {id(m) for m in model.modules() if "forward" in vars(m)}
    try:
        return answer(model, x)
    finally:
        left = remove_leftover_hooks(model, before)
        replaced = [m for m in model.modules() if "forward" in vars(m) and id(m) not in patched]
        for m in replaced:
            del m.forward
        if left:
            raise Incorrect("hooks_left_behind", n=left, s="s" if left > 1 else "")
        if replaced:
            raise Incorrect("forward_replaced", n=len(replaced))


def _run(answer: Any, case: Case) -> Any:
    """The half that touches the answer (no reference here): its result, a module's name or None."""
    model, x = case.args
    out = _watched(answer, model, x)
    names = [n for n, _ in model.named_modules()]
    if out is not None and not isinstance(out, str) or isinstance(out, str) and out not in names:
        raise Incorrect("not_a_name", got=_describe(out))
    return out


def _finish(out: Any, case: Case) -> Any:
    """The reference's half: the module the reference names, on the case's own model."""
    model, x = case.args
    want = first_nonfinite(model, x)
    if out != want and not any(m.match_output and m.example(model, x) == out for m in MISTAKES):
        raise Incorrect("wrong_module", got=_describe(out), want=_describe(want))
    return out  # (a known mistake's answer: the framework names it, checked on more cases)


def _probe_forward_raises(answer: Any, r: Rand) -> None:
    """A model whose forward raises (a shape mismatch): the hooks must be removed all the same."""
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), TakeFirst(), nn.Linear(4, 2))
    try:
        _watched(answer, model, r.randn(2, 3))
    except Incorrect:
        raise
    except Exception:  # noqa: BLE001 - letting the forward's error through is fine
        pass


# --- wrong answers
def _outputs(output: Any) -> list:
    return list(output) if isinstance(output, (tuple, list)) else [output]


def _scan(model, x, bad, pick_last=False, leaves_only=False, order="finish", remove=True):
    """A hook on every module recording each name whose output is ``bad``; wrong in one way."""
    hits: list[str] = []
    mods = [(n, m) for n, m in model.named_modules() if not (leaves_only and list(m.children()))]
    handles = [m.register_forward_hook(lambda mod, i, o, name=n: hits.append(name) if any(
        isinstance(t, torch.Tensor) and bool(bad(t).any()) for t in _outputs(o)) else None) for n, m in mods]
    with torch.no_grad():
        model(x)
    if remove:
        for h in handles:
            h.remove()
    if order == "defined":
        names = [n for n, _ in model.named_modules()]
        hits = sorted(set(hits), key=names.index)
    if not hits:
        return None
    return hits[-1] if pick_last else hits[0]


def _not_finite(t):
    return ~torch.isfinite(t)


def _nan_only(model, x):
    return _scan(model, x, torch.isnan)


def _last(model, x):
    return _scan(model, x, _not_finite, pick_last=True)


def _leaves_only(model, x):
    return _scan(model, x, _not_finite, leaves_only=True)


def _definition_order(model, x):
    return _scan(model, x, _not_finite, order="defined")


def _keeps_hooks(model, x):
    return _scan(model, x, _not_finite, remove=False)


def _scan_first(model, x):
    hits: list[str] = []
    handles = [m.register_forward_hook(lambda mod, i, o, name=n: hits.append(name) if isinstance(
        o, torch.Tensor) and not bool(torch.isfinite(o).all()) else None) for n, m in model.named_modules()]
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return hits[0] if hits else None


def _replaces_forward(model, x):
    found: list[str] = []
    for name, m in model.named_modules():
        def spy(*a, _f=m.forward, _n=name, **k):
            out = _f(*a, **k)
            if not found and any(isinstance(t, torch.Tensor) and not bool(torch.isfinite(t).all())
                                 for t in _outputs(out)):
                found.append(_n)
            return out
        m.forward = spy
    with torch.no_grad():
        model(x)
    return found[0] if found else None


# --- declaration
MISTAKES = [
        Mistake("nan_only", "Your answer names a later module: `torch.isnan` misses `inf` and `-inf` (the log of "
                "0 is `-inf`, not NaN; NaN appears only a layer later). Test with `~torch.isfinite(out)`.",
                _nan_only),
        Mistake("last_not_first", "Your answer names the *last* module with a non-finite output (often the model "
                "itself, which finishes last). Keep the first one you see and ignore later ones.", _last),
        Mistake("leaves_only", "You hooked only the modules without children, but a module's own forward can "
                "make the inf too (here the model's, name `\"\"`). Hook every module of `named_modules()`.",
                _leaves_only),
        Mistake("definition_order", "You picked the first name in `named_modules()` order, which lists a "
                "container before its layers and follows the order modules were *defined*. Record the first hook "
                "call that sees a non-finite output: that is the order modules *finish*.", _definition_order),
        Mistake("tuple_output", "An output can be a tuple of tensors (here `(output, auxiliary)`); look inside "
                "it instead of skipping it.", _scan_first),
        Mistake("hooks_left_behind", "Your function left {n} hook{s} registered. A forgotten hook runs on every "
                "later forward: keep the handles that `register_forward_hook` returns and call `.remove()` on "
                "each, in a `finally:` so that it happens even when the forward raises.", _keeps_hooks,
                match_output=False),
        Mistake("forward_replaced", "Your function replaced the `forward` of {n} module(s) and left it so: every "
                "later call runs your recorder. Use `register_forward_hook` and remove the handles.",
                _replaces_forward, match_output=False),
        Mistake("not_a_name", "Return the *name* of the module (a str as `named_modules()` gives it, such as "
                "`'2'` or `'body.1'`, `''` for the model itself), or None when every output is finite; you "
                "returned {got}.", lambda model, x: 3, match_output=False),
        Mistake("wrong_module", "You returned {got}, but the first module whose output holds NaN or inf is "
                "{want}.", lambda model, x: None, match_output=False),
]
register(Exercise(
    lesson=LESSON, name="first_nonfinite", title="The first module whose output holds NaN or inf",
    reference=first_nonfinite, cases=_cases, run=_run, finish=_finish, edge_cases=EDGE_CASES, n_random=12,
    probes=[_probe_forward_raises], mistakes=MISTAKES,
    hints=[
        "In the saved run, which module made the first -inf, and which only passed it on? In which order does "
        "the model list its modules, and in which order do they finish? Which test catches inf as well as nan?",
        "A recorder on every module, the model too, that keeps the first name whose output (or any tensor in a "
        "tuple output) is not all finite, in the order the modules finish; taken off again whatever happens "
        "in the forward.",
        "Names: register_forward_hook and the handle's remove, torch.isfinite, try and finally.",
    ],
))
