"""tie_weights: a teammate's tie (``head.weight = nn.Parameter(tok_emb.weight)``) shares memory but
leaves the parameter count unchanged and splits at the first ``.double()``; the learner finds why
and ties the head to the token embedding for good (one Parameter object).

Subtle: tying is sharing one ``nn.Parameter`` object, assigned; a copy of the values (``copy_``,
``.clone()``) is two parameters that drift apart at the first optimizer step; a new Parameter on
the same storage (``nn.Parameter(emb.weight)``, ``.data = ...``) is listed twice by
``parameters()`` and stepped twice; assigning a tensor (``.detach()``, ``.T``) to a Parameter
attribute raises. Either direction is a tie (``head.weight = tok_emb.weight`` as here, or
``tok_emb.weight = head.weight`` as nanoGPT writes it). The run builds a small model, calls the
answer, and reports the model's unique parameter count and that one step trains both uses.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from course_utils.grading import Case, Exercise, Incorrect, Mistake, Rand, register

from ...answers.l15_small_gpt import tie_weights
from ._kit import LESSON


# --- reference: imported above from course_utils/answers/l15_small_gpt.py (generated from the notebook)


# --- cases
class SmallLM(nn.Module):
    """The shape of the lesson's model: token and position embeddings, a layer, a head."""

    def __init__(self, vocab_size: int, d_model: int, block_size: int, seed: int):
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.tok_emb = nn.Embedding(vocab_size, d_model)
            self.pos_emb = nn.Embedding(block_size, d_model)
            self.mix = nn.Linear(d_model, d_model)
            self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1]))
        return self.head(torch.tanh(self.mix(x)))


def _cases(r: Rand) -> Case:
    vocab = r.integer(5, 20)
    return Case((vocab, r.choice([d for d in range(3, 9) if d != vocab]), r.integer(2, 6), r.integer(0, 10_000)))


EDGE_CASES = [Case((10, 4, 3, 0), label="vocabulary 10, d_model 4"),
              Case((65, 16, 8, 1), label="vocabulary 65, d_model 16")]


def _run(answer: Any, case: Case) -> Any:
    model = SmallLM(*case.args)
    originals = (model.tok_emb.weight.detach().clone(), model.head.weight.detach().clone())
    answer(model)
    head, emb = model.head.weight, model.tok_emb.weight
    if head is not emb:
        if head.shape == emb.shape and head.data_ptr() == emb.data_ptr():
            raise Incorrect("separate_parameter")
        if head.shape == emb.shape and torch.equal(head, emb):
            raise Incorrect("copied_not_tied")
        raise Incorrect("not_tied")
    if not any(emb.shape == w.shape and torch.equal(emb.detach(), w) for w in originals):
        raise Incorrect("reinitialised")
    count = sum(p.numel() for p in model.parameters())
    # one step of training on a loss that reaches the weight through both uses
    idx = torch.arange(case.args[2]).remainder(case.args[0])[None]
    before = emb.detach().clone()
    model(idx).logsumexp(-1).sum().backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad
    moved = (model.tok_emb.weight - before).abs().sum() > 0
    return torch.tensor([count, int(bool(moved) and model.head.weight is model.tok_emb.weight)])


# --- wrong answers
def _copied(model):
    with torch.no_grad():
        model.head.weight.copy_(model.tok_emb.weight)


def _new_parameter(model):
    model.head.weight = nn.Parameter(model.tok_emb.weight)


def _assigned_tensor(model):
    model.head.weight = model.tok_emb.weight.detach()


def _fresh_embedding(model):
    model.tok_emb = nn.Embedding(model.tok_emb.num_embeddings, model.tok_emb.embedding_dim)
    model.head.weight = model.tok_emb.weight


def _untouched(model):
    return model


# --- declaration
register(Exercise(
    lesson=LESSON, name="tie_weights", title="A weight tie that holds: head and token embedding share one Parameter",
    reference=tie_weights, cases=_cases, edge_cases=EDGE_CASES, run=_run,
    mistakes=[
        Mistake("copied_not_tied", "You copied the embedding's values into the head: they are equal now, but they "
                "are still two parameters, and the first optimizer step moves them apart. Tying makes both modules "
                "hold the *same* Parameter object: assign it.", _copied, match_output=False),
        Mistake("separate_parameter", "This is the teammate's tie: your head's weight is a second Parameter "
                "object on the embedding's memory (made with `nn.Parameter(...)` or `.data`). `parameters()` "
                "counts objects, so the model lists the matrix twice, an optimizer keeps two states for it and "
                "steps it twice, and `.double()` converts each object on its own and splits them. Both modules "
                "must hold one and the same object.", _new_parameter, match_output=False),
        Mistake("assigned_tensor", "A module's weight must be an `nn.Parameter`: assign the embedding's `.weight` "
                "Parameter itself, not a tensor made from it (`.data`, `.detach()`, `.T`).", _assigned_tensor),
        Mistake("reinitialised", "The shared weight holds new values, neither the embedding's nor the head's: "
                "tying should change which Parameter the head uses, not make new ones (a model being trained would "
                "lose what it learned).", _fresh_embedding, match_output=False),
        Mistake("not_tied", "After your `tie_weights` the head's weight and the embedding's weight are different "
                "parameters with different values: nothing is shared. Make the head use the embedding's "
                "Parameter.", _untouched, match_output=False),
    ],
    hints=[
        "The teammate's two weights share memory, yet the count did not drop: what does the model's parameter "
        "list count, memory or objects? And what does an optimizer keep one of per object it is given?",
        "Sharing memory was not enough for the count, the optimizer or a change of dtype: what do all three go by? "
        "What would the embedding and the head have to hold, for each of them to see the weight only once?",
        "Compare the two weights with `is` after your tie; a module's Parameter attribute can be assigned like any "
        "attribute. And look at the shapes: does the head need a transpose?",
    ],
))
