"""Lesson 03 (nn.Module): the activation helpers (hooks, deep MLP, histograms, widget), and
what the generic grader tests cannot see: correct classes written differently from the
reference (other attribute names, ModuleList instead of Sequential, torch's own layers) pass,
structural checks name the mistake, and messages are the declared ones."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from course_utils import grading  # noqa: E402
from course_utils.lesson_props.l03_activations import (  # noqa: E402
    activation_histograms, activation_stds, deep_mlp, init_scale_widget, record_activations,
)
from course_utils.exercises import l03_nn_module as l03  # noqa: E402
from course_utils.grading import Incorrect  # noqa: E402

LESSON = "03_nn_module"


def check(name, answer, seed=7, n_random=None):
    return grading.check(f"{LESSON}.{name}", answer, seed=seed, n_random=n_random)


# --------------------------------------------------------------------------- activations helpers
def test_record_activations_names_shapes_and_removes_hooks():
    model = deep_mlp(depth=4, width=32, activation="relu", gain=1.0, seed=3)
    X = torch.randn(10, 32)
    acts = record_activations(model, X)
    assert list(acts) == ["1", "3", "5", "7"]
    assert all(a.shape == (10, 32) and not a.requires_grad for a in acts.values())
    assert all(not m._forward_hooks for m in model.modules())
    expected = model[:2](X)
    assert torch.allclose(acts["1"], expected)


def test_record_activations_removes_hooks_when_forward_fails():
    model = deep_mlp(depth=2, width=8)
    with pytest.raises(RuntimeError):
        record_activations(model, torch.randn(3, 5))  # wrong width
    assert all(not m._forward_hooks for m in model.modules())


def test_deep_mlp_is_seeded_and_leaves_global_rng_alone():
    state = torch.get_rng_state()
    a = deep_mlp(depth=3, width=64, gain=1.5, seed=4)
    b = deep_mlp(depth=3, width=64, gain=1.5, seed=4)
    assert torch.equal(torch.get_rng_state(), state)
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)
    w = a[0].weight
    assert w.std().item() == pytest.approx(1.5 / math.sqrt(64), rel=0.1)
    assert torch.equal(a[0].bias, torch.zeros(64))


def test_gain_decides_whether_tanh_activations_vanish():
    X = torch.randn(256, 128, generator=torch.Generator().manual_seed(0))
    small = activation_stds(record_activations(deep_mlp(8, 128, "tanh", 0.5), X))
    good = activation_stds(record_activations(deep_mlp(8, 128, "tanh", 1.0), X))
    assert small[-1] < 0.02 < 0.15 < good[-1]
    assert all(b < a for a, b in zip(small, small[1:]))


def test_histograms_and_widget():
    acts = record_activations(deep_mlp(3, 16), torch.randn(20, 16))
    fig = activation_histograms(acts, title="t")
    assert sum(ax.get_visible() for ax in fig.axes) == 3
    plt.close(fig)
    w = init_scale_widget(depth=3, width=32, batch=64)
    gain = next(c for c in w.children if getattr(c, "description", "") == "gain")
    first = w.result
    gain.value = 0.2
    assert len(w.result) == 3 and w.result[-1] < first[-1]
    plt.close("all")


# --------------------------------------------------------------------------- messages
IDS = [e for e in grading.exercises() if e.startswith(LESSON)]


@pytest.mark.parametrize("exercise_id", IDS)
def test_named_mistakes_show_their_declared_message(exercise_id):
    ex = grading.exercise(exercise_id)
    for m in ex.mistakes:
        assert "message set by" not in m.message and len(m.message) > 40, m.id
        if m.example is None:
            continue
        res = grading.check(exercise_id, m.example, seed=3)
        assert res.mistake == m.id and res.message == m.message


# --------------------------------------------------------------------------- MLP
class MLPModuleList(nn.Module):
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__()
        sizes = [in_features, *hidden_sizes, num_classes]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = torch.relu(layer(x))
        return self.layers[-1](x)


class MLPHalfRegistered(nn.Module):
    def __init__(self, in_features, hidden_sizes, num_classes):
        super().__init__()
        sizes = [in_features, *hidden_sizes]
        self.hidden = [nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])]  # a plain list
        self.out = nn.Linear(sizes[-1], num_classes)

    def forward(self, x):
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.out(x)


def test_mlp_written_differently_passes():
    assert check("MLP", MLPModuleList, n_random=20).passed


def test_mlp_partly_unregistered_names_the_count():
    res = check("MLP", MLPHalfRegistered)
    assert res.mistake == "wrong_parameter_count" and "plain list" in res.message


def test_mlp_not_a_module():
    class Plain:
        def __init__(self, *args):
            pass

    assert check("MLP", Plain).mistake == "not_a_module"


def test_copy_parameters_in_order_reports_shapes():
    with pytest.raises(Incorrect) as info:
        l03._copy_parameters_in_order(nn.Linear(3, 4), nn.Linear(4, 3))
    assert info.value.mistake == "wrong_layers" and "(4, 3)" in info.value.message
    src, dst = nn.Linear(3, 4), nn.Linear(3, 4)
    l03._copy_parameters_in_order(src, dst)
    assert torch.equal(src.weight, dst.weight) and torch.equal(src.bias, dst.bias)


# --------------------------------------------------------------------------- Tower, RMSNorm
def test_tower_extra_parameter_is_a_structure_problem():
    class TowerExtra(l03.Tower):
        def __init__(self, width, depth):
            super().__init__(width, depth)
            self.extra = nn.Parameter(torch.zeros(1))

    res = check("Tower", TowerExtra)
    assert res.mistake == "wrong_structure" and "extra" in res.message


def test_rmsnorm_alternatives_pass():
    class WithTorchLayer(nn.Module):
        def __init__(self, dim, eps=1e-6):
            super().__init__()
            self.norm = nn.RMSNorm(dim, eps=eps)

        def forward(self, x):
            return self.norm(x)

    class WithRsqrt(nn.Module):
        def __init__(self, dim, eps=1e-6):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))  # the text names it `weight`

        def forward(self, x):
            return self.weight * x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps)

    assert check("RMSNorm", WithTorchLayer, n_random=20).passed
    assert check("RMSNorm", WithRsqrt, n_random=20).passed


def test_rmsnorm_wrong_parameter_shape_and_init():
    class Scalar(l03.RMSNorm):
        def __init__(self, dim, eps=1e-6):
            super().__init__(dim, eps)
            self.weight = nn.Parameter(torch.ones(1))

    class Zeros(l03.RMSNorm):
        def __init__(self, dim, eps=1e-6):
            super().__init__(dim, eps)
            self.weight = nn.Parameter(torch.zeros(dim))

    assert check("RMSNorm", Scalar).mistake == "wrong_parameters"
    assert check("RMSNorm", Zeros).mistake == "wrong_init"


# --------------------------------------------------------------------------- RunningMean
def test_running_mean_alternative_and_non_persistent():
    class Detached(nn.Module):
        def __init__(self, num_features, momentum=0.1):
            super().__init__()
            self.m = momentum
            self.register_buffer("running_mean", torch.zeros(num_features))

        def forward(self, x):
            if self.training:
                self.running_mean = (1 - self.m) * self.running_mean + self.m * x.detach().mean(0)
            return x - self.running_mean

    class NonPersistent(l03.RunningMean):
        def __init__(self, num_features, momentum=0.1):
            nn.Module.__init__(self)
            self.momentum = momentum
            self.register_buffer("running_mean", torch.zeros(num_features), persistent=False)

    assert check("RunningMean", Detached, n_random=20).passed
    assert check("RunningMean", NonPersistent).mistake == "not_persistent"


# --------------------------------------------------------------------------- init_weights
def test_init_weights_alternatives_pass():
    def with_data(m):
        if isinstance(m, nn.Linear):
            m.weight.data.normal_(0.0, m.weight.shape[1] ** -0.5)
            if m.bias is not None:
                m.bias.data.zero_()

    def with_kaiming(m):
        if type(m) is nn.Linear:
            nn.init.kaiming_normal_(m.weight, nonlinearity="linear")  # gain 1, fan_in: LeCun normal
            if m.bias is not None:
                nn.init.constant_(m.bias, 0.0)

    assert check("init_weights", with_data, n_random=20).passed
    assert check("init_weights", with_kaiming, n_random=20).passed


def test_init_weights_he_init_is_a_wrong_std_with_numbers():
    def he(m):
        if isinstance(m, nn.Linear):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)

    res = check("init_weights", he)
    assert res.mistake == "wrong_std" and "1/√" in res.message
    assert check("init_weights", lambda m: None).mistake == "weights_unchanged"


def test_init_weights_statistics_are_reliable():
    """The reference passes many cases (no false alarms from the statistical tests)."""
    res = grading.check(f"{LESSON}.init_weights", l03.init_weights, seed=99, n_random=60)
    assert res.passed, res.text()


# --------------------------------------------------------------------------- freeze_backbone
def test_freeze_alternatives_pass():
    def loop(model):
        for p in model.backbone.parameters():
            p.requires_grad = False
        return tuple(p for p in model.head.parameters() if p.requires_grad)

    assert check("freeze_backbone", loop, n_random=20).passed

    def whole_head(model):  # wrong when a head parameter was frozen before: "still trainable"
        model.backbone.requires_grad_(False)
        return list(model.head.parameters())

    assert check("freeze_backbone", whole_head).mistake == "returned_frozen"


def test_freeze_returned_copies():
    def copies(model):
        model.backbone.requires_grad_(False)
        return [p.detach().clone().requires_grad_() for p in model.head.parameters()]

    assert check("freeze_backbone", copies).mistake == "returned_copies"


def test_frozen_model_gets_no_backbone_grads():
    model = l03.Backboned(4, 6, 3)
    params = l03.freeze_backbone(model)
    torch.optim.SGD(params, lr=0.1)  # non-empty list
    model(torch.randn(5, 4)).sum().backward()
    assert all(p.grad is None for p in model.backbone.parameters())
    assert all(p.grad is not None for p in model.head.parameters())


# --------------------------------------------------------------------------- predict_proba
def test_predict_proba_alternatives_pass():
    def with_inference_mode(model, X):
        modes = {m: m.training for m in model.modules()}
        model.eval()
        with torch.inference_mode():
            out = model(X).softmax(-1)
        for m, mode in modes.items():
            m.train(mode) if not list(m.children()) else setattr(m, "training", mode)
        return out

    assert check("predict_proba", with_inference_mode, n_random=20).passed

    def top_level_only(model, X):  # "the mode you found it in" is per submodule
        mode = model.training
        model.eval()
        with torch.inference_mode():
            out = model(X).softmax(-1)
        model.train(mode)
        return out

    assert check("predict_proba", top_level_only).mistake == "mixed_modes_not_restored"


def test_predict_proba_always_train_at_the_end_fails_on_eval_models():
    def always_train(model, X):
        model.eval()
        with torch.no_grad():
            out = torch.softmax(model(X), dim=1)
        model.train()
        return out

    res = check("predict_proba", always_train, n_random=20)
    assert res.mistake == "mode_not_restored", res.text()


def test_checks_do_not_leave_hooks_or_modes_on_learner_objects():
    model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 2))
    model.train()
    res = check("predict_proba", l03.predict_proba)
    assert res.passed
    assert model.training and not model._forward_pre_hooks
