"""What the held-out test of ``DigitClassifier`` checks about ``predict`` and ``self.model``
(see digit_classifier.py): the predictions' type, shape and dtype; modes and grad mode during
``predict``; that the predictions are the argmax of what ``self.model`` returned, logits and
not probabilities; that they are deterministic and depend on the trained parameters. Each
check raises ``Incorrect(id, **facts)``; the messages are declared in digit_classifier.py."""

from __future__ import annotations

import copy

import torch
from torch import nn

from course_utils.grading import Incorrect


def check_predictions(preds, n: int) -> torch.Tensor:
    if preds is None:
        raise Incorrect("returned_none")
    if isinstance(preds, torch.Tensor) and type(preds) is not torch.Tensor:
        raise Incorrect("predictions_type", got=f"a {type(preds).__name__} (a subclass of it)")
    if not isinstance(preds, torch.Tensor):
        raise Incorrect("predictions_type", got=type(preds).__name__)
    if n == 1 and preds.dim() == 0:
        raise Incorrect("squeezed_one_image")
    if preds.shape != (n,):
        extra = " Take `argmax(dim=1)` of the logits." if preds.dim() == 2 and preds.shape == (n, 10) else ""
        raise Incorrect("predictions_shape", n=n, shape=tuple(preds.shape), extra=extra)
    if preds.is_floating_point() or preds.dtype == torch.bool:
        raise Incorrect("predictions_dtype")
    return preds.detach().cpu().long()  # (predictions made on a GPU are fine)


def _predict_capturing(clf, model, X, held, seed: int):
    """`predict` once more, from a different global RNG state (restored after), recording what
    `self.model` is called with and returns."""
    calls: list = []
    handle = model.register_forward_hook(lambda m, args, out: calls.append((args, out)))
    state = torch.get_rng_state()
    torch.manual_seed(seed)
    try:
        with torch.enable_grad():
            preds = clf.predict(X[held].clone())
    finally:
        handle.remove()
        torch.set_rng_state(state)
    return check_predictions(preds, len(held)), calls


def _logits(calls) -> torch.Tensor | None:
    outs = [o for _, o in calls]
    if outs and all(isinstance(o, torch.Tensor) and o.dim() == 2 for o in outs):
        return torch.cat([o.detach().float().cpu() for o in outs])
    return None


def check_deterministic_network(clf, model, X, held, preds, seed: int) -> None:
    """`predict` must be a function of the images (no dropout left on), and its answers must come
    from the trained parameters (not, say, a lookup of stored training images plus
    `0 * self.layer(x)`). Cheap: two more predictions and two forward passes."""
    preds_a, calls_a = _predict_capturing(clf, model, X, held, seed=12345)
    preds_b, calls_b = _predict_capturing(clf, model, X, held, seed=54321)
    logits_a, logits_b = _logits(calls_a), _logits(calls_b)
    same_logits = (logits_a is None or logits_b is None or (
        logits_a.shape == logits_b.shape and torch.allclose(logits_a, logits_b, rtol=1e-4, atol=1e-5)))
    if not (torch.equal(preds, preds_a) and torch.equal(preds_a, preds_b) and same_logits):
        raise Incorrect("random_predictions")
    inputs = [args for args, _ in calls_a]
    if not inputs:  # predict called self.model.forward(...) directly: probe it on the images
        inputs = [(X[held].clone(),)]
    # the trainable ones: frozen parameters could hold stored training images
    params = [p for p in model.parameters() if p.requires_grad and p.is_floating_point()]
    saved = [p.detach().clone() for p in params]
    modes = [(m, m.training) for m in model.modules()]
    gen = torch.Generator().manual_seed(seed)
    model.eval()
    try:
        with torch.no_grad():
            before = [model(*args) for args in inputs]
            for p in params:  # new random weights of a similar size
                scale = float(p.abs().mean()) if p.numel() else 0.0
                p.copy_(torch.randn(p.shape, generator=gen).to(p.dtype) * max(scale, 0.05) * 2)
            after = [model(*args) for args in inputs]
    except Exception:  # noqa: BLE001 - a model that cannot be probed this way: the other checks judge it
        return
    finally:
        with torch.no_grad():
            for p, v in zip(params, saved):
                p.copy_(v)
        for m, training in modes:
            m.training = training
    before_l, after_l = _logits([(None, o) for o in before]), _logits([(None, o) for o in after])
    if before_l is None or after_l is None or before_l.shape != after_l.shape or before_l.shape[1] < 2:
        return
    changed = float((before_l.argmax(dim=1) != after_l.argmax(dim=1)).double().mean())
    if changed < 0.25:
        raise Incorrect("not_a_network", unchanged=f"{1 - changed:.0%}")


def _is_logits(o) -> bool:
    return isinstance(o, torch.Tensor) and o.dim() == 2 and o.shape[1] == 10 and o.is_floating_point()


def check_predict(clf, model, X, held) -> torch.Tensor:
    """Everything about `predict`: modes, grad, that it uses self.model and its logits."""
    records: list[tuple[bool, bool, bool]] = []
    own = {id(m) for m in model.modules()}
    outputs: list = []  # what self.model returns during predict (after any preprocessing in predict)
    handles = [
        nn.modules.module.register_module_forward_pre_hook(
            lambda m, args: records.append((m.training, torch.is_grad_enabled(), id(m) in own))),
        model.register_forward_hook(lambda m, args, out: outputs.append(out)),
    ]
    try:
        with torch.enable_grad():
            preds = clf.predict(X[held].clone())
            grad_left_on = torch.is_grad_enabled()  # (leaving the `with` restores it)
    finally:
        for handle in handles:
            handle.remove()
    preds = check_predictions(preds, len(held))
    rows = [o for o in outputs if isinstance(o, torch.Tensor) and o.dim() == 2 and o.shape[1] == 10]
    if rows and sum(len(o) for o in rows) == len(held):  # one plain pass over the images: preds = its argmax
        logits = torch.cat([o.detach().float().cpu() for o in rows])
        top = logits.max(dim=1).values
        own_pick = logits.gather(1, preds.clamp(0, 9).view(-1, 1)).squeeze(1)
        if bool(((preds < 0) | (preds > 9)).any()) or bool((own_pick < top).any()):
            raise Incorrect("predict_not_from_model")
    if any(training for training, _, _ in records):
        raise Incorrect("forgot_eval")
    if any(grad for _, grad, _ in records):
        raise Incorrect("forgot_no_grad")
    if not grad_left_on:
        raise Incorrect("grad_left_off")
    if not any(mine for _, _, mine in records):
        raise Incorrect("predict_without_model")
    if outputs:  # self.model(...) was called: look at what it returned
        if not all(_is_logits(o) for o in outputs):
            got = next(o for o in outputs if not _is_logits(o))
            shown = f"shape {tuple(got.shape)}, {got.dtype}" if isinstance(got, torch.Tensor) else type(got).__name__
            raise Incorrect("model_output", got=shown)
        out = torch.cat([o.detach().float().cpu() for o in outputs])[:64]
    else:  # predict called self.model.forward(...) directly: run it on the images ourselves
        probe_model = copy.deepcopy(model).eval()
        try:
            with torch.no_grad():
                out = probe_model(X[held][:64].clone())
        except Exception:  # noqa: BLE001 - a model that needs predict's preprocessing: nothing to probe
            out = None
    if (isinstance(out, torch.Tensor) and out.dim() == 2 and out.is_floating_point() and bool((out >= 0).all())
            and torch.allclose(out.sum(dim=1), torch.ones(len(out)), atol=1e-4)):
        raise Incorrect("softmax_output")
    return preds
