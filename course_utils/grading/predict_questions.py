"""The predict-the-output questions of every lesson (see :mod:`course_utils.grading.predict`).

``code`` is what the question asks about: it is RUN to get the expected answer, so no answer
here is typed by hand. ``shows`` is the text of the notebook cell after the question that
shows the answer (tests/test_predict.py checks the question sits before it)."""

from __future__ import annotations

from .question import _q

# ---------------------------------------------------------------------- 00 start here
_q("00_start_here.sum_dim0_shape", "shape",
   "What is the shape of `a.sum(dim=0)` for `a = torch.randn(2, 3)`?",
   "a = torch.randn(2, 3)\na.sum(dim=0).shape",
   "Reducing along a dimension removes it: summing the 2 rows leaves one number per column, "
   "shape (3,). Lesson 01 covers `dim` and `keepdim`.",
   shows="print(a.sum(dim=0).shape)")
_q("00_start_here.int_fahrenheit_dtype", "dtype",
   "What dtype has `c * 9 / 5 + 32` for the int64 tensor `c = torch.tensor([0, 100])`?",
   "c = torch.tensor([0, 100])\n(c * 9 / 5 + 32).dtype",
   "`*` and `+` keep int64, but `/` is true division and always gives a floating-point "
   "result: the default float dtype, float32. (`//` would stay integer.)",
   shows="(c * 9 / 5 + 32).dtype")
_q("00_start_here.item_of_two", "value",
   '`t.item()` raises for `t = torch.tensor([1.0, 2.0])`. Which of these run without an error: '
   'a `t[0].item()`, b `t.sum().item()`, c `float(t)`, d `t.tolist()`? Answer with the list of '
   "letters in order, such as `['c']`.",
   't = torch.tensor([1.0, 2.0])\n'
   'def runs(get):\n'
   '    try:\n'
   '        get()\n'
   '    except (RuntimeError, ValueError):\n'
   '        return False\n'
   '    return True\n'
   "options = {'a': lambda: t[0].item(), 'b': lambda: t.sum().item(), 'c': lambda: float(t), 'd': lambda: t.tolist()}\n"
   '[k for k, get in options.items() if runs(get)]',
   '`.item()` turns a ONE-element tensor into a Python number; with two elements there is no '
   "single number to return, and it raises a RuntimeError ('a Tensor with 2 elements cannot be "
   "converted to Scalar'). `float(t)` needs one element too (c: a ValueError). Pick one element first (a) or "
   'reduce to one (b); `tolist()` (d) turns a tensor of any shape into (nested) lists of Python '
   'numbers.',
   shows="torch.tensor([1.0, 2.0]).item()")

# ---------------------------------------------------------------------- 01 tensors
_q("01_tensors.int_div_dtype", "dtype",
   "What is the dtype of `torch.tensor([1, 2, 3]) / 2`?",
   "i = torch.tensor([1, 2, 3])\n(i / 2).dtype",
   "`/` is true division: even between integers it gives a float, in the default dtype "
   "float32. `i // 2` (floor division) stays int64.",
   shows="(i / 2).dtype")
_q("01_tensors.broadcast_shape", "shape",
   "What is the shape of `col + row` for `col` of shape (3, 1) and `row` of shape (4,)?",
   "col = torch.zeros(3, 1)\nrow = torch.zeros(4)\n(col + row).shape",
   "Align on the right: (3, 1) against (_, 4). The 1 stretches to 4 and the missing "
   "dimension counts as 1 and stretches to 3: (3, 4), every row value added to every column value.",
   shows="print(col + row)")
_q("01_tensors.broadcast_error", "value",
   "`torch.ones(3, 4) + torch.ones(3)` raises. Which right-hand operands would work with `torch.ones(3, 4)`: "
   "a `torch.ones(4)`, b `torch.ones(3, 1)`, c `torch.ones(1, 3)`, d `torch.ones(1, 4)`? Answer with the "
   "list of letters in order, such as `['c']`.",
   "def broadcasts(b):\n"
   "    try:\n"
   "        torch.ones(3, 4) + b\n"
   "    except RuntimeError:\n"
   "        return False\n"
   "    return True\n"
   "operands = {'a': torch.ones(4), 'b': torch.ones(3, 1), 'c': torch.ones(1, 3), 'd': torch.ones(1, 4)}\n"
   "[k for k, b in operands.items() if broadcasts(b)]",
   "Aligned on the right, the last sizes must match or be 1: `(4,)` and `(1, 4)` match the 4, and "
   "`(3, 1)` has a 1 there and a 3 that matches the rows. `(1, 3)` puts 3 against 4, as `(3,)` did: "
   "the error names that dimension. `(3, 1)` is the fix when the 3 numbers are one per row.",
   shows="for b in (torch.ones(4), torch.ones(3, 1), torch.ones(1, 3), torch.ones(1, 4)):")
_q("01_tensors.keepdim_shape", "shape",
   "What is the shape of `t.sum(dim=1, keepdim=True)` for `t` of shape (2, 3)?",
   "t = torch.zeros(2, 3)\nt.sum(dim=1, keepdim=True).shape",
   "Summing over dim 1 leaves one number per row; `keepdim=True` keeps the reduced dimension "
   "with size 1, giving (2, 1), which broadcasts back against `t` (without it: (2,)).",
   shows="t.sum(dim=1, keepdim=True).shape")

# ---------------------------------------------------------------------- 02 autograd
_q("02_autograd.grad_accumulates", "value",
   "After three `(3 * w).backward()` calls on `w = torch.tensor(1.0, requires_grad=True)`, what is `w.grad.item()`?",
   "w = torch.tensor(1.0, requires_grad=True)\nfor step in range(3):\n    (3 * w).backward()\nw.grad.item()",
   "Each backward ADDS d(3w)/dw = 3 to `w.grad`: 3 + 3 + 3 = 9. That is why a training loop "
   "clears gradients every step.",
   shows="(3 * w).backward()")
_q("02_autograd.second_backward", "value",
   "`y = x**2; y.backward(); y.backward()` raises on the second call. Which changes would let the second "
   "`backward()` run: a `y.backward(retain_graph=True)` as the first call, b `x.grad = None` between the two "
   "calls, c `y = x**2` again between them, d the second call inside `with torch.no_grad():`? Answer with "
   "the list of letters in order, such as `['c']`.",
   'def second_backward_runs(fix):\n'
   '    x = torch.tensor(2.0, requires_grad=True)\n'
   '    y = x**2\n'
   "    y.backward(retain_graph=fix == 'a')\n"
   "    if fix == 'b':\n"
   '        x.grad = None\n'
   "    if fix == 'c':\n"
   '        y = x**2\n'
   '    try:\n'
   "        with torch.no_grad() if fix == 'd' else torch.enable_grad():\n"
   '            y.backward()\n'
   '    except RuntimeError:\n'
   '        return False\n'
   '    return True\n'
   "[fix for fix in 'abcd' if second_backward_runs(fix)]",
   "The first backward frees the values the graph saved (`x`, for the derivative of `x**2`), and the "
   "second raises 'Trying to backward through the graph a second time'. `retain_graph=True` keeps them (a); "
   "a new forward builds a new graph (c), the usual fix. Clearing `.grad` touches the result, not the "
   "graph (b), and `no_grad` only stops recording NEW operations (d): both still fail.",
   shows="y.backward()\ny.backward()")
_q("02_autograd.retain_graph_grad", "value",
   "With `y = x**2` at `x = 2`, `y.backward(retain_graph=True)` then `y.backward()`: what is `x.grad.item()`?",
   "x = torch.tensor(2.0, requires_grad=True)\ny = x**2\ny.backward(retain_graph=True)\ny.backward()\nx.grad.item()",
   "dy/dx = 2x = 4, and the two backward passes accumulate: 4 + 4 = 8.",
   shows="y.backward(retain_graph=True)")
_q("02_autograd.no_grad_requires_grad", "value",
   "`w` requires grad; what is `a.requires_grad` for `a = w * 2` computed inside `with torch.no_grad():`?",
   "w = torch.tensor(1.0, requires_grad=True)\nwith torch.no_grad():\n    a = w * 2\na.requires_grad",
   "Nothing inside `no_grad` is recorded, so `a` has no history and does not require grad "
   "(False), although `w` does.",
   shows='print("no_grad:       ", a.requires_grad)')

# ---------------------------------------------------------------------- 03 nn.Module
_q("03_nn_module.empty_optimizer", "value",
   '`BrokenTower` keeps its layers in a Python list, so `torch.optim.SGD(broken.parameters(), '
   'lr=0.1)` raises. A tower that keeps its three `nn.Linear` layers in which of these can be '
   'trained: a `nn.ModuleList(layers)`, b `nn.Sequential(*layers)`, c `tuple(layers)`, d a dict '
   "`{'0': layers[0], '1': layers[1], '2': layers[2]}`? Answer with the list of letters in "
   "order, such as `['c']`.",
   'class Tower(nn.Module):\n'
   '    def __init__(self, keep):\n'
   '        super().__init__()\n'
   '        self.blocks = keep([nn.Linear(4, 4) for _ in range(3)])\n'
   'def trains(keep):\n'
   '    try:\n'
   '        torch.optim.SGD(Tower(keep).parameters(), lr=0.1)\n'
   '    except ValueError:\n'
   '        return False\n'
   '    return True\n'
   "options = {'a': nn.ModuleList, 'b': lambda layers: nn.Sequential(*layers), 'c': tuple,\n"
   "           'd': lambda layers: {str(i): layer for i, layer in enumerate(layers)}}\n"
   '[k for k, keep in options.items() if trains(keep)]',
   'A module registers what is assigned to it as a Module, a Parameter or a buffer, nothing '
   'else. A list, a tuple (c) or a dict (d) of layers is a plain Python object whose parameters '
   "stay invisible, and the optimizer gets an empty list: a ValueError ('optimizer got an empty "
   "parameter list'). `nn.ModuleList` (a) and `nn.Sequential` (b) are modules that register "
   'their children; `nn.ModuleDict` would fix d.',
   shows="torch.optim.SGD(broken.parameters(), lr=0.1)")
_q("03_nn_module.buffers_in_state_dict", "value",
   "What is `list(nn.BatchNorm1d(3).state_dict())`?",
   "list(nn.BatchNorm1d(3).state_dict())",
   "The state_dict holds parameters (`weight`, `bias`) AND persistent buffers: the running "
   "mean and variance and the batch counter `num_batches_tracked`, parameters first.",
   shows="list(nn.BatchNorm1d(3).state_dict())")
_q("03_nn_module.mlp_param_count", "value",
   "How many parameters has `nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))`?",
   "net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))\n"
   "sum(p.numel() for p in net.parameters())",
   "A Linear(i, o) has i*o weights plus o biases: 64*128+128 + 128*64+64 + 64*10+10 = 17226. "
   "ReLU has none.",
   shows='print("total", sum(p.numel() for p in net.parameters()))')
_q("03_nn_module.batchnorm_one_example", "value",
   'A model ending in `nn.BatchNorm1d`, in training mode, raises on ONE example `x` of shape '
   '(1, 4). Which of these run: a `model.eval()(x)`, b `model(torch.cat([x, x]))`, c `model(x)` '
   'inside `with torch.no_grad():`, d `model.requires_grad_(False)(x)`? Answer with the list of '
   "letters in order, such as `['c']`.",
   'x = torch.randn(1, 4)\n'
   'def model():\n'
   '    return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))\n'
   'def runs(call):\n'
   '    try:\n'
   '        call(model())\n'
   '    except ValueError:\n'
   '        return False\n'
   '    return True\n'
   'def under_no_grad(m):\n'
   '    with torch.no_grad():\n'
   '        return m(x)\n'
   "options = {'a': lambda m: m.eval()(x), 'b': lambda m: m(torch.cat([x, x])), 'c': under_no_grad,\n"
   "           'd': lambda m: m.requires_grad_(False)(x)}\n"
   '[k for k, call in options.items() if runs(call)]',
   "In training mode BatchNorm normalises with the batch's own statistics, and one value per "
   "channel has no variance: a ValueError ('Expected more than 1 value per channel when "
   "training'). `eval()` switches to the running statistics (a), and a batch of two has a "
   'variance (b). `no_grad` (c) and `requires_grad_(False)` (d) stop gradients, not training '
   'mode: only `train()` and `eval()` change it.',
   shows="bn_model(torch.randn(1, 4))")

# ---------------------------------------------------------------------- 04 data
_q("04_data.collated_label_dtype", "dtype",
   "Items are `(tensor, int)` pairs. What dtype do the labels `yb` of a DataLoader batch have?",
   "from torch.utils.data import DataLoader\n"
   "pairs = [(torch.tensor([float(i), float(i)]), i % 2) for i in range(5)]\n"
   "xb, yb = next(iter(DataLoader(pairs, batch_size=2)))\n"
   "yb.dtype",
   "The default collate turns a list of Python ints into a tensor with `torch.tensor`, which "
   "gives int64, exactly what `CrossEntropyLoss` wants for class labels.",
   shows="loader = DataLoader(pairs, batch_size=2)")
_q("04_data.random_split_test_len", "value",
   "`random_split` of the 1797 digits with fractions `[0.8, 0.2]`: what is `len(test_set)`?",
   "from torch.utils.data import TensorDataset, random_split\n"
   "from course_utils.datasets import load_digits\n"
   "X, y = load_digits()\n"
   "train_set, test_set = random_split(TensorDataset(X, y), [0.8, 0.2], generator=torch.Generator().manual_seed(42))\n"
   "len(test_set)",
   "Each fraction is rounded down (1437.6 -> 1437, 359.4 -> 359) and the one item left over is "
   "given round-robin from the FIRST part: 1438 and 359.",
   shows="print(type(train_set).__name__, len(train_set), len(test_set))")
_q("04_data.drop_last_batches", "value",
   "1797 digits, `DataLoader(digits, batch_size=256, drop_last=True)`: what is `len(loader)`?",
   "from torch.utils.data import DataLoader, TensorDataset\n"
   "digits = TensorDataset(torch.zeros(1797, 64), torch.zeros(1797))\n"
   "loader = DataLoader(digits, batch_size=256, drop_last=True)\n"
   "len(loader)",
   "1797 = 7 * 256 + 5: seven full batches and a last one of 5 items, which `drop_last=True` "
   "throws away, so 7 (without it, 8).",
   shows="loader = DataLoader(digits, batch_size=256, drop_last=True)")
_q("04_data.ragged_collate", "value",
   'Items hold token tensors of different lengths, and the default collate fails on a batch of '
   'them. Which `DataLoader(seqs, batch_size=4, ...)` gives a first batch: a `shuffle=True`, b '
   '`collate_fn=lambda items: items`, c `collate_fn=lambda items: pad_sequence([x for x, _ in '
   'items], batch_first=True)`, d `drop_last=True`? Answer with the list of letters in order, '
   "such as `['c']`.",
   'from torch.utils.data import DataLoader\n'
   'from torch.nn.utils.rnn import pad_sequence\n'
   'from course_utils.datasets import SequenceDataset\n'
   'seqs = SequenceDataset(n=200)\n'
   'def batches(**options):\n'
   '    try:\n'
   '        next(iter(DataLoader(seqs, batch_size=4, **options)))\n'
   '    except RuntimeError:\n'
   '        return False\n'
   '    return True\n'
   "options = {'a': dict(shuffle=True), 'b': dict(collate_fn=lambda items: items),\n"
   "           'c': dict(collate_fn=lambda items: pad_sequence([x for x, _ in items], batch_first=True)),\n"
   "           'd': dict(drop_last=True)}\n"
   '[k for k, o in options.items() if batches(**o)]',
   'The default collate `torch.stack`s the items, which needs equal shapes: a RuntimeError '
   "('stack expects each tensor to be equal size'), whatever the order (a) or the number of "
   'batches (d). A `collate_fn` decides how a batch is built: a plain list of items (b) works '
   'but leaves the batching to the model; padding every sequence to the longest one (c) makes '
   'one tensor. You write the padding one, with the lengths, below.',
   shows="next(iter(DataLoader(seqs, batch_size=4)))")

# ---------------------------------------------------------------------- 05 training loop
_q("05_training_loop.train_batches", "value",
   "1437 training images, `batch_size=64`, `shuffle=True`: how many batches per epoch (`len(train_loader)`)?",
   "from torch.utils.data import DataLoader, TensorDataset\n"
   "train_set = TensorDataset(torch.zeros(1437, 64), torch.zeros(1437))\n"
   "len(DataLoader(train_set, batch_size=64, shuffle=True))",
   "ceil(1437 / 64) = 23: 22 full batches and a last one of 29. Shuffling changes the order, "
   "not the count.",
   shows='print(len(train_loader), "training batches;"')
_q("05_training_loop.int32_targets", "value",
   "`CrossEntropyLoss()(logits, y)` raises for int32 class targets `y = torch.tensor([1, 0, 3, 9], "
   "dtype=torch.int32)`. Which targets work instead: a `y.long()`, b `y.float()`, c `y.to(torch.int16)`, "
   "d `torch.tensor(y.tolist())`? Answer with the list of letters in order, such as `['c']`.",
   'def loss_runs(targets):\n'
   '    try:\n'
   '        nn.CrossEntropyLoss()(torch.randn(4, 10), targets)\n'
   '    except RuntimeError:\n'
   '        return False\n'
   '    return True\n'
   'y = torch.tensor([1, 0, 3, 9], dtype=torch.int32)\n'
   "options = {'a': y.long(), 'b': y.float(), 'c': y.to(torch.int16), 'd': torch.tensor(y.tolist())}\n"
   '[k for k, targets in options.items() if loss_runs(targets)]',
   "Class-index targets must be int64 (`long`): the error says it expected Long and got Int. `y.long()` "
   "converts (a), and a tensor made from Python ints is int64 already (d). int16 fails like int32 (c), "
   "and a 1-D float target is not class probabilities (b): those need the shape of the logits.",
   shows='loss_fn(logits, torch.tensor([1, 0, 3, 9], dtype=torch.int32))')
_q("05_training_loop.column_targets", "value",
   "`CrossEntropyLoss()(logits, y)` with `logits` (4, 10) raises for targets `y` of shape (4, 1). Which "
   "targets work instead: a `y.squeeze(1)`, b `y.view(-1)`, c `y.T`, d `y.squeeze(0)`? Answer with the "
   "list of letters in order, such as `['c']`.",
   'def loss_runs(targets):\n'
   '    try:\n'
   '        nn.CrossEntropyLoss()(torch.randn(4, 10), targets)\n'
   '    except (RuntimeError, ValueError):\n'
   '        return False\n'
   '    return True\n'
   'y = torch.tensor([[1], [0], [3], [9]])\n'
   "options = {'a': y.squeeze(1), 'b': y.view(-1), 'c': y.T, 'd': y.squeeze(0)}\n"
   '[k for k, targets in options.items() if loss_runs(targets)]',
   "Class targets must have shape (N,): `squeeze(1)` drops the extra dimension (a) and `view(-1)` "
   "flattens it (b). `y.T` has shape (1, 4), a batch of one against four logits (c), and `squeeze(0)` "
   "does nothing, dimension 0 having size 4 (d).",
   shows='loss_fn(logits, torch.tensor([[1], [0], [3], [9]]))')
_q("05_training_loop.regression_broadcast", "shape",
   "What is the shape of `pred - target` for `pred` (5, 1) and `target` (5,)?",
   "pred = torch.randn(5, 1)\ntarget = torch.randn(5)\n(pred - target).shape",
   "Broadcasting (lesson 01) stretches both: (5, 1) against (_, 5) gives (5, 5), every "
   "prediction against every target. `mse_loss` then averages 25 wrong differences.",
   shows="wrong = nn.functional.mse_loss(pred, target)")

# ---------------------------------------------------------------------- 06 losses and optimizers
_q("06_losses_optimizers.uniform_cross_entropy", "value",
   "What is `round(F.cross_entropy(torch.zeros(1, 4), torch.tensor([2])).item(), 4)`?",
   "round(F.cross_entropy(torch.zeros(1, 4), torch.tensor([2])).item(), 4)",
   "Equal logits give every class probability 1/4, so the loss is -log(1/4) = log 4 = 1.3863, "
   "whatever the target: a classifier that knows nothing scores log C.",
   shows='print(F.cross_entropy(torch.zeros(1, 4), torch.tensor([2])).item(), " log(4) =", math.log(4))')
_q("06_losses_optimizers.float_index_targets", "value",
   "`F.cross_entropy(logits, y.float())` raises for `logits` of shape (4, 3) and the class indices "
   "`y = torch.tensor([0, 2, 1, 2])`. Which targets work: a `y`, b `y.float()`, c `F.one_hot(y, 3)`, "
   "d `F.one_hot(y, 3).float()`? Answer with the list of letters in order, such as `['c']`.",
   'def loss_runs(target):\n'
   '    try:\n'
   '        F.cross_entropy(torch.randn(4, 3), target)\n'
   '    except RuntimeError:\n'
   '        return False\n'
   '    return True\n'
   'y = torch.tensor([0, 2, 1, 2])\n'
   "options = {'a': y, 'b': y.float(), 'c': F.one_hot(y, 3), 'd': F.one_hot(y, 3).float()}\n"
   '[k for k, target in options.items() if loss_runs(target)]',
   "A 1-D target holds class indices, which must be integers (a; b fails: 'expected target dtype to be "
   "Long or Byte, but got Float'). A target shaped like the logits is read as class PROBABILITIES, which "
   "must be floats: the float one-hot works (d) and the int64 one-hot fails (c).",
   shows='F.cross_entropy(logits, y.float())')
_q("06_losses_optimizers.bce_shape_mismatch", "value",
   '`bce = nn.BCEWithLogitsLoss()` raises for `logits` of shape (4, 1) and `target` of shape '
   '(4,). Which of these work: a `bce(logits.squeeze(1), target)`, b `bce(logits, '
   'target.unsqueeze(1))`, c `bce(logits.T, target)`, d '
   "`nn.BCEWithLogitsLoss(reduction='sum')(logits, target)`? Answer with the list of letters in "
   "order, such as `['c']`.",
   'logits, target = torch.randn(4, 1), torch.ones(4)\n'
   'def runs(loss):\n'
   '    try:\n'
   '        loss()\n'
   '    except ValueError:\n'
   '        return False\n'
   '    return True\n'
   'bce = nn.BCEWithLogitsLoss()\n'
   "options = {'a': lambda: bce(logits.squeeze(1), target), 'b': lambda: bce(logits, target.unsqueeze(1)),\n"
   "           'c': lambda: bce(logits.T, target), 'd': lambda: nn.BCEWithLogitsLoss(reduction='sum')(logits, target)}\n"
   '[k for k, loss in options.items() if runs(loss)]',
   '`BCEWithLogitsLoss` wants logits and targets of the SAME shape and raises a ValueError '
   'naming both sizes; it never broadcasts. Squeezing the logits (a) or unsqueezing the target '
   '(b) makes them equal; `logits.T` is (1, 4), still not (4,) (c), and the reduction does not '
   'change the check (d).',
   shows="nn.BCEWithLogitsLoss()(torch.randn(4, 1), torch.ones(4))")
_q("06_losses_optimizers.adam_decay_step", "value",
   "`p = nn.Parameter(torch.tensor([10.0]))`, `torch.optim.Adam([p], lr=0.1, weight_decay=0.01)`, "
   "gradient 0, one step: what is `round(p.item(), 2)`?",
   "p = nn.Parameter(torch.tensor([10.0]))\nopt = torch.optim.Adam([p], lr=0.1, weight_decay=0.01)\n"
   "p.grad = torch.zeros(1)\nopt.step()\nround(p.item(), 2)",
   "Adam adds wd * p = 0.1 to the gradient, then divides by the gradient's own size: the first "
   "step moves by lr = 0.1 whatever wd is, to 9.9. AdamW would decay directly: 10 * (1 - 0.1 * 0.01) = 9.99.",
   shows="def one_step(optimizer_class, weight_decay):")

# ---------------------------------------------------------------------- 10 performance
_q("10_performance.bf16_small_step", "value",
   "What is `(torch.tensor(1.0, dtype=torch.bfloat16) + 0.001).item()`?",
   "(torch.tensor(1.0, dtype=torch.bfloat16) + 0.001).item()",
   "bfloat16 has 8 significant bits: the numbers next to 1.0 are 1 - 2**-8 and 1 + 2**-7, so "
   "adding 0.001 rounds back to exactly 1.0. Small updates vanish; hence float32 master weights.",
   shows='print("bfloat16: 1 + 0.001 =", (w16 + 0.001).item())')
_q("10_performance.autocast_linear_dtype", "dtype",
   "Under `torch.autocast('cpu', dtype=torch.bfloat16)`, what dtype has the output of an `nn.Linear` given float32 input?",
   "layer = nn.Linear(64, 128)\n"
   "with torch.autocast(device_type='cpu', dtype=torch.bfloat16):\n"
   "    hidden = layer(torch.randn(4, 64))\n"
   "hidden.dtype",
   "`linear` is on autocast's low-precision list on every device: it casts its inputs and "
   "weight to bfloat16 and returns bfloat16.",
   shows='print("linear output:", hidden.dtype)')
_q("10_performance.autocast_loss_dtype", "dtype",
   "Under the same autocast, what dtype has `cross_entropy` of the bfloat16 logits?",
   "layer = nn.Linear(64, 10)\n"
   "with torch.autocast(device_type='cpu', dtype=torch.bfloat16):\n"
   "    loss = F.cross_entropy(layer(torch.randn(4, 64)), torch.zeros(4, dtype=torch.long))\n"
   "loss.dtype",
   "Losses are on autocast's float32 list: `cross_entropy` upcasts its bfloat16 input and "
   "returns float32 on every device.",
   shows='print("loss:         ", loss.dtype)')
_q("10_performance.autocast_param_dtype", "dtype",
   "And the dtype of the layer's weight (`model[0].weight.dtype`) after the autocast block?",
   "layer = nn.Linear(64, 128)\n"
   "with torch.autocast(device_type='cpu', dtype=torch.bfloat16):\n"
   "    hidden = layer(torch.randn(4, 64))\n"
   "layer.weight.dtype",
   "Autocast casts COPIES for the operations it runs in low precision; the parameters (the "
   "master weights) stay float32, and so do their gradients.",
   shows='print("parameters:   ", model[0].weight.dtype)')

_q("10_performance.static_recompiles", "value",
   "`scaled_relu` is compiled with `dynamic=False` and called with inputs of 3, 4, 5, 6, 7 and 8 "
   "elements. How many graphs does the backend receive?",
   "graphs = []\n"
   "def backend(gm, example_inputs):\n"
   "    graphs.append(gm)\n"
   "    return gm.forward\n"
   "torch._dynamo.reset()\n"
   "fn = torch.compile(lambda x: torch.relu(x) * 2 + 1, backend=backend, dynamic=False)\n"
   "for n in (3, 4, 5, 6, 7, 8):\n"
   "    fn(torch.randn(n))\n"
   "torch._dynamo.reset()\n"
   "len(graphs)",
   "With `dynamic=False` every graph is specialised to its input's exact shape, and a guard on "
   "the shape fails for each new size: 6 sizes, 6 compilations. The default (`dynamic=None`) "
   "recompiles once with a symbolic size; `dynamic=True` compiles once.",
   shows="for dynamic in (False, None, True):")

# ---------------------------------------------------------------------- 11 distributed
_q("11_distributed.sampler_len", "value",
   "What is `len(DistributedSampler(range(17), num_replicas=3, rank=2))`?",
   "from torch.utils.data import DistributedSampler\n"
   "len(DistributedSampler(range(17), num_replicas=3, rank=2))",
   "The sampler pads 17 items to the next multiple of 3, 18, so that every rank gets the same "
   "number: 6 each (rank 2 gets one repeated item). Unequal counts would leave one rank waiting "
   "in an all-reduce the others never join.",
   shows='print("rank 2 visits", len(DistributedSampler(range(17), num_replicas=3, rank=2)), "items")')
_q("11_distributed.no_set_epoch", "value",
   "A `DistributedSampler(range(6), num_replicas=2, rank=0)` is iterated twice without `set_epoch`. "
   "Do the two orders differ: what is `list(sampler) != list(sampler)`?",
   "from torch.utils.data import DistributedSampler\n"
   "sampler = DistributedSampler(range(6), num_replicas=2, rank=0)\n"
   "list(sampler) != list(sampler)",
   "The shuffle is seeded with `seed + epoch`, and the epoch only changes when you call "
   "`set_epoch`: without it every epoch visits the same order.",
   shows='print("different orders without set_epoch:", list(sampler) != list(sampler))')
_q("11_distributed.chunk_last_shape", "shape",
   "What is the shape of `torch.arange(10).chunk(4)[-1]`?",
   "torch.arange(10).chunk(4)[-1].shape",
   "`chunk(4)` makes pieces of ceil(10 / 4) = 3 items, so the pieces are 3, 3, 3 and 1: the "
   "last has shape (1,). Shards from `chunk` need not be equal.",
   shows='print("chunk sizes:", [len(p) for p in pieces], "| last:", pieces[-1].shape)')

# ---------------------------------------------------------------------- 07 persistence
_q("09_persistence.state_dict_keys", "value",
   "What is `list(model.state_dict())` for "
   "`nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10))`?",
   "model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10))\n"
   "list(model.state_dict())",
   "Keys are the dotted attribute paths; a Sequential names its children 0, 1, 2, 3. ReLU "
   "and Dropout hold no tensors, so only layers 0 and 3 appear, weight before bias.",
   shows="for name, tensor in model.state_dict().items():")
_q("09_persistence.weights_only_refuses", "value",
   'With `weights_only=True`, the default, which of these does `torch.load` read back after '
   "`torch.save`: a `model.state_dict()`, b `{'epoch': 3, 'loss': 0.25, 'note': 'best'}`, c the "
   'whole `model` (an `nn.Sequential`), d `optimizer.state_dict()` (SGD with momentum, after a '
   "step)? Answer with the list of letters in order, such as `['c']`.",
   'import io, pickle\n'
   'model = nn.Sequential(nn.Linear(4, 2))\n'
   'optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)\n'
   'model(torch.randn(3, 4)).sum().backward()\n'
   'optimizer.step()\n'
   'def loads(obj):\n'
   '    buffer = io.BytesIO()\n'
   '    torch.save(obj, buffer)\n'
   '    buffer.seek(0)\n'
   '    try:\n'
   '        torch.load(buffer)\n'
   '    except pickle.UnpicklingError:\n'
   '        return False\n'
   '    return True\n'
   "options = {'a': model.state_dict(), 'b': {'epoch': 3, 'loss': 0.25, 'note': 'best'},\n"
   "           'c': model, 'd': optimizer.state_dict()}\n"
   '[k for k, obj in options.items() if loads(obj)]',
   '`weights_only=True` unpickles tensors, primitive Python values and containers of them, and '
   'refuses anything else with an `UnpicklingError` before running any of it: the file with the '
   '`Payload` above, and a whole model too (c), whose classes it will not import. State dicts '
   '(a, d) and plain metadata (b) load. That is why checkpoints hold state dicts.',
   shows='torch.load(path("suspicious.pt"))')
_q("09_persistence.strict_missing_keys", "value",
   "Loading the 4-layer checkpoint into `bigger`, the same layers plus two more, raises (strict by "
   "default). Which loads work: a `bigger.load_state_dict(sd, strict=False)`, b `bigger[:4].load_state_dict(sd)`, "
   "c `bigger.load_state_dict(sd, assign=True)`, d `bigger.load_state_dict({k: v for k, v in sd.items() if "
   "k.startswith('3.')})`? Answer with the list of letters in order, such as `['c']`.",
   'small = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10))\n'
   'def bigger():\n'
   '    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10), nn.ReLU(), nn.Linear(10, 10))\n'
   'def loads(load):\n'
   '    try:\n'
   '        load(bigger(), small.state_dict())\n'
   '    except RuntimeError:\n'
   '        return False\n'
   '    return True\n'
   "options = {'a': lambda m, sd: m.load_state_dict(sd, strict=False),\n"
   "           'b': lambda m, sd: m[:4].load_state_dict(sd),\n"
   "           'c': lambda m, sd: m.load_state_dict(sd, assign=True),\n"
   "           'd': lambda m, sd: m.load_state_dict({k: v for k, v in sd.items() if k.startswith('3.')})}\n"
   '[k for k, load in options.items() if loads(load)]',
   "`load_state_dict` is strict: `5.weight` and `5.bias` are missing from the file, and it raises a "
   "RuntimeError listing them. `strict=False` loads what matches and returns the missing keys (a); a "
   "slice of a Sequential shares its layers, and holds exactly the file's keys (b). `assign=True` changes "
   "how tensors are copied, not which keys must be there (c), and dropping keys from the file only adds "
   "missing ones (d).",
   shows='bigger.load_state_dict(torch.load(path("digits.pt")))')
_q("09_persistence.shape_mismatch_not_strict", "value",
   'A 10-class checkpoint `sd` into `five`, the same layers with a 5-output last layer `3`: '
   'which loads work: a `five.load_state_dict(sd, strict=False)`, b `five.load_state_dict({k: v '
   "for k, v in sd.items() if not k.startswith('3.')}, strict=False)`, c "
   "`five[:3].load_state_dict({k: v for k, v in sd.items() if not k.startswith('3.')})`, d "
   '`five.load_state_dict(sd, assign=True)`? Answer with the list of letters in order, such as '
   "`['c']`.",
   'ten = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10))\n'
   'sd = ten.state_dict()\n'
   'def loads(load):\n'
   '    five = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 5))\n'
   '    try:\n'
   '        load(five)\n'
   '    except RuntimeError:\n'
   '        return False\n'
   '    return True\n'
   "options = {'a': lambda m: m.load_state_dict(sd, strict=False),\n"
   "           'b': lambda m: m.load_state_dict({k: v for k, v in sd.items() if not k.startswith('3.')}, strict=False),\n"
   "           'c': lambda m: m[:3].load_state_dict({k: v for k, v in sd.items() if not k.startswith('3.')}),\n"
   "           'd': lambda m: m.load_state_dict(sd, assign=True)}\n"
   '[k for k, load in options.items() if loads(load)]',
   '`strict=False` forgives missing and unexpected KEYS, never a changed SHAPE: copying a (10, '
   "64) tensor into a (5, 64) parameter raises a RuntimeError ('size mismatch'), with "
   "`strict=False` (a) as with `assign=True` (d). Leave the old head's keys out and load the "
   'rest: into the whole model with `strict=False` (b), or into the slice that holds exactly '
   'those keys (c). The new head keeps its fresh initialisation.',
   shows='five_classes.load_state_dict(torch.load(path("digits.pt")), strict=False)')

# ---------------------------------------------------------------------- 07 debugging
_q("07_debugging.isfinite_list", "value",
   "What is `torch.isfinite(torch.tensor([1.0, float(\"inf\"), float(\"nan\")])).tolist()`?",
   'torch.isfinite(torch.tensor([1.0, float("inf"), float("nan")])).tolist()',
   "`isfinite` is False for nan, inf and -inf alike: [True, False, False]. `isnan` would say "
   "[False, False, True] and miss the inf, which is why a guard uses `isfinite`.",
   shows='print("isfinite:", torch.isfinite(torch.tensor([1.0, float("inf"), float("nan")])).tolist())')
_q("07_debugging.frozen_grad_none", "value",
   "`net = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))`, the first layer frozen with "
   "`net[0].requires_grad_(False)`; after `net(torch.randn(2, 3)).sum().backward()`, what is "
   "`[p.grad is None for p in net.parameters()]`?",
   "net = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))\nnet[0].requires_grad_(False)\n"
   "net(torch.randn(2, 3)).sum().backward()\n[p.grad is None for p in net.parameters()]",
   "[True, True, False, False]: autograd computes no gradient for a tensor that does not require "
   "one, so the frozen weight and bias keep `.grad` None (not zeros); the second layer's get theirs. "
   "Code that reads gradients must skip None.",
   shows='print("grad is None:", [p.grad is None for p in net.parameters()])')
_q("07_debugging.default_scalar_limit", "value",
   "A writer logs tag `\"x\"` at steps 0 to 10 049 (10 050 events). How many events does "
   "`EventAccumulator(logdir).Scalars(\"x\")` return after `Reload()`?",
   "from tensorboard.backend.event_processing import event_accumulator\n"
   "n_logged = 10_050\n"
   "min(n_logged, event_accumulator.DEFAULT_SIZE_GUIDANCE[\"scalars\"])  # the cell after the question runs it",
   "10000: by default the accumulator keeps at most 10 000 scalar events per tag "
   "(`DEFAULT_SIZE_GUIDANCE`; reservoir sampling drops the rest). Its `size_guidance` argument sets "
   "that budget.",
   shows='print(len(default.Scalars("x")), "of the 10 050 events logged")')
_q("07_debugging.chance_loss", "value",
   "What is `round(F.cross_entropy(torch.zeros(4, 10), torch.tensor([0, 3, 7, 9])).item(), 2)`: the loss of "
   "a 10-class model whose logits are all equal?",
   "round(F.cross_entropy(torch.zeros(4, 10), torch.tensor([0, 3, 7, 9])).item(), 2)",
   "Equal logits give every class probability 1/10, and the loss is -log(1/10) = ln(10) = 2.30, "
   "whatever the labels. A loss stuck there means the model predicts chance.",
   shows="print(round(F.cross_entropy(torch.zeros(4, 10), torch.tensor([0, 3, 7, 9])).item(), 4), "
   "round(math.log(10), 4))")

# ---------------------------------------------------------------------- 08 convolutions
_q("08_convolutions.conv_output_shape", "shape",
   "What is the shape of `nn.Conv2d(1, 6, kernel_size=3)` applied to 4 images of shape (1, 8, 8)?",
   "conv = nn.Conv2d(in_channels=1, out_channels=6, kernel_size=3)\nconv(torch.zeros(4, 1, 8, 8)).shape",
   "Batch stays 4, channels become out_channels = 6, and a 3x3 window fits in 8 - 3 + 1 = 6 "
   "positions along each axis: (4, 6, 6, 6).",
   shows='print("output:", tuple(conv(X_train[:4]).shape))')
_q("08_convolutions.channels_last_error", "value",
   "The same `Conv2d(1, 6, 3)` refuses channels-last images `x` of shape (4, 8, 8, 1). Which of these give "
   "it the same images, channels first: a `x.transpose(1, 3)`, b `x.permute(0, 3, 1, 2)`, "
   "c `x.reshape(4, 1, 8, 8)`? Answer with the list of letters in order, such as `['c']`.",
   "x = torch.randn(4, 8, 8, 1)\n"
   "right = torch.einsum('nhwc->nchw', x)\n"
   "fixes = {'a': x.transpose(1, 3), 'b': x.permute(0, 3, 1, 2), 'c': x.reshape(4, 1, 8, 8)}\n"
   "[k for k, t in fixes.items() if t.shape == right.shape and torch.equal(t, right)]",
   "The layer reads the channels from dimension 1 (8 here, where it expects 1), so it raises. "
   "`permute(0, 3, 1, 2)` moves the channels there and keeps every image. With ONE channel, "
   "`reshape` happens to give the same tensor (no element moves past a dimension of size 1); with 3 "
   "channels it would scramble them. `transpose(1, 3)` has the right shape, but every image is "
   "transposed (H and W swapped): the layer runs, on mirrored digits.",
   shows='    print(name, tuple(t.shape), "same images:", torch.equal(t, right))')
_q("08_convolutions.stride2_pad1_shape", "shape",
   "What is the output shape of `nn.Conv2d(1, 1, 3, stride=2, padding=1)` on `torch.zeros(1, 1, 8, 8)`?",
   "layer = nn.Conv2d(1, 1, kernel_size=3, stride=2, padding=1)\nlayer(torch.zeros(1, 1, 8, 8)).shape",
   "floor((8 + 2*1 - 3) / 2) + 1 = floor(3.5) + 1 = 4 along each axis: (1, 1, 4, 4). The "
   "padding keeps the window count of stride 1, the stride halves it.",
   shows='print(f"{str(kwargs):36} -> {tuple(layer(x).shape[2:])}")')
_q("08_convolutions.conv_param_count", "value",
   "How many parameters has `nn.Conv2d(1, 16, kernel_size=3, padding=1)`?",
   "conv = nn.Conv2d(1, 16, kernel_size=3, padding=1)\nsum(p.numel() for p in conv.parameters())",
   "Weight (16, 1, 3, 3) = 144 plus 16 biases = 160, whatever the image size and the padding.",
   shows="conv = nn.Conv2d(1, 16, kernel_size=3, padding=1)")

# ---------------------------------------------------------------------- 09 capstone
_q("12_capstone.val_shape", "shape",
   "The stratified split holds out `round(0.2 * count)` images of each digit of the 1437 training "
   "images (287 in all): what is `X_val.shape`?",
   "from course_utils.datasets import digits_split\n"
   "split = digits_split(images=True)\n"
   "n_val = sum(round(0.2 * int(c)) for c in torch.bincount(split.y_train))\n"
   "split.X_train[torch.arange(n_val)].shape",
   "28 + 30 + 25 + 30 + 29 + 29 + 30 + 29 + 27 + 30 = 287 images, each (1, 8, 8): indexing with a "
   "tensor of indices keeps the other dimensions, giving (287, 1, 8, 8).",
   shows='print(f"train {tuple(X_train.shape)}, validation {tuple(X_val.shape)}')
_q("12_capstone.train_batches", "value",
   "The remaining 1150 training images, `batch_size=64`: what is `len(train_loader)`?",
   "from torch.utils.data import DataLoader, TensorDataset\n"
   "len(DataLoader(TensorDataset(torch.zeros(1150, 64)), batch_size=64, shuffle=True))",
   "ceil(1150 / 64) = 18: 17 full batches and a last one of 62.",
   shows='print(len(train_loader), "training batches")')
_q("12_capstone.preds_dtype", "dtype",
   "`predict(model, X)` returns `model(X).argmax(dim=1)`. What is its dtype?",
   "model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))\nmodel(torch.zeros(5, 1, 8, 8)).argmax(dim=1).dtype",
   "`argmax` returns indices, and indices are int64, whatever the dtype of the scores: "
   "directly comparable with int64 labels.",
   shows="print(val_preds.dtype")
_q("12_capstone.state_dict_keys", "value",
   "What is `list(baseline.state_dict())` for `nn.Sequential(nn.Flatten(), nn.Linear(64, 10))`?",
   "baseline = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))\nlist(baseline.state_dict())",
   "`Flatten` has no tensors; the Linear is child 1 of the Sequential, so its keys are "
   "`1.weight` and `1.bias`. Reloading needs the same architecture, with the same names.",
   shows="print(list(baseline.state_dict()))")

# ---------------------------------------------------------------------- 13 images from files
_IMAGE_FOLDER = ("import tempfile\nfrom torchvision import datasets\nfrom torchvision.transforms import v2\n"
                 "from course_utils.glyphs import make_image_folder\n"
                 "root = make_image_folder(tempfile.mkdtemp(), chars='AB', per_font=1, fonts=('DejaVuSans',))\n")
_q("13_images_from_files.imagefolder_shape", "shape",
   "The PNGs are 28x28 grayscale. What is the shape of `datasets.ImageFolder(root, transform=v2.ToImage())[0][0]`?",
   _IMAGE_FOLDER + "datasets.ImageFolder(root, transform=v2.ToImage())[0][0].shape",
   "(3, 28, 28): `ImageFolder`'s default loader converts every file to RGB, so a grey image comes back as three "
   "equal channels. `v2.Grayscale(1)` gives one channel back.",
   shows='print(len(folder), "images;", "item 0:", tuple(image.shape), image.dtype, "label", label)')
_q("13_images_from_files.imagefolder_dtype", "dtype",
   "And the dtype of that image?",
   _IMAGE_FOLDER + "datasets.ImageFolder(root, transform=v2.ToImage())[0][0].dtype",
   "`ToImage` keeps the file's bytes: uint8, 0 to 255. `ToDtype(torch.float32, scale=True)` makes floats in [0, 1].",
   shows='print(len(folder), "images;", "item 0:", tuple(image.shape), image.dtype, "label", label)')
_q("13_images_from_files.class_to_idx", "value",
   "A folder holds the classes `J`, `A` and `7`, written in that order. What is its `ImageFolder(...).class_to_idx`?",
   "import tempfile\nfrom torchvision import datasets\nfrom course_utils.glyphs import make_image_folder\n"
   "root = make_image_folder(tempfile.mkdtemp(), chars='JA7', per_font=1, fonts=('DejaVuSans',))\n"
   "datasets.ImageFolder(root).class_to_idx",
   "Classes are numbered in sorted order of the folder names, whatever order they were made in; as strings, "
   "digits sort before upper-case letters.",
   shows="print(datasets.ImageFolder(mixed).class_to_idx)")
_q("13_images_from_files.test_images", "value",
   "Ten letters, three images per letter and font, 22 fonts. Five fonts held out: how many test images?",
   "fonts = [f'font{k}' for k in range(22) for _ in range(10 * 3)]\n"
   "held_out = {f'font{k}' for k in range(5)}\nsum(f in held_out for f in fonts)",
   "Every image of a held-out font goes to test: 5 fonts x 10 letters x 3 images = 150.",
   shows='print(len(train_idx), "train images,", len(test_idx), "test images;",')

# ---------------------------------------------------------------------- 14 transfer learning
_q("14_transfer_learning.shortcut_params", "value",
   "How many parameters has the projection shortcut of a block from 8 to 16 channels with stride 2: "
   "`nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False), nn.BatchNorm2d(16))`?",
   "shortcut = nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False), nn.BatchNorm2d(16))\n"
   "sum(p.numel() for p in shortcut.parameters())",
   "The 1x1 convolution has a (16, 8, 1, 1) weight, 128 numbers, and no bias; BatchNorm2d(16) has a "
   "weight and a bias of 16 each: 160. The stride changes the output size, never the parameters, and "
   "BatchNorm's running statistics are buffers, not parameters.",
   shows='print("parameters:", sum(p.numel() for p in shortcut.parameters()))')
_q("14_transfer_learning.gap_shape", "shape",
   "What is the shape of `x.mean(dim=(2, 3))` for `x = torch.randn(8, 32, 7, 7)`?",
   "x = torch.randn(8, 32, 7, 7)\nx.mean(dim=(2, 3)).shape",
   "Averaging over height and width removes both: one number per channel per image, (8, 32). "
   "`nn.AdaptiveAvgPool2d(1)` keeps them as 1x1, (8, 32, 1, 1), hence the `flatten(x, 1)` after it.",
   shows='print("mean over H and W:", tuple(x.mean(dim=(2, 3)).shape))')
_q("14_transfer_learning.trainable_after_freeze", "value",
   "In `GlyphResNet(num_classes=10)` (final feature width 32) every parameter except `fc`'s is frozen. "
   "How many parameters still require grad?",
   "from course_utils.lesson_props.l14_transfer_learning import GlyphResNet\n"
   "model = GlyphResNet(num_classes=10)\n"
   "for name, p in model.named_parameters():\n"
   "    p.requires_grad_(name.startswith('fc.'))\n"
   "sum(p.numel() for p in model.parameters() if p.requires_grad)",
   "Only `fc = Linear(32, 10)` trains: a 10x32 weight and 10 biases, 330 numbers, against about 20,000 "
   "in the backbone. That is why feature extraction can learn from 50 images without memorising them.",
   shows='print("trainable:", sum(p.numel() for p in model.parameters() if p.requires_grad),')

# ---------------------------------------------------------------------- 15 small GPT
_q("15_small_gpt.embedding_shape", "shape",
   "What is the shape of `nn.Embedding(95, 16)` applied to a batch of token ids of shape (4, 8)?",
   "emb = nn.Embedding(95, 16)\nemb(torch.zeros(4, 8, dtype=torch.long)).shape",
   "An embedding replaces each id by its row of the weight, a vector of `embedding_dim` = 16 numbers, and "
   "keeps the ids' own shape in front: (4, 8, 16). It is indexing, `emb.weight[ids]`.",
   shows='print("ids", tuple(ids.shape), "->", tuple(emb(ids).shape))')
_q("15_small_gpt.float_ids_error", "value",
   "`nn.Embedding(10, 4)(torch.tensor([1.0, 2.0]))` raises. Which of these ids does it accept: a "
   "`torch.tensor([1, 2])`, b `torch.tensor([1.0, 2.0]).round()`, c `torch.tensor([1.0, 2.0]).int()`, "
   "d `torch.tensor([1.0, 2.0]).long()`? Answer with the list of letters in order, such as `['c']`.",
   "def accepted(ids):\n"
   "    try:\n"
   "        nn.Embedding(10, 4)(ids)\n"
   "    except RuntimeError:\n"
   "        return False\n"
   "    return True\n"
   "x = torch.tensor([1.0, 2.0])\n"
   "candidates = {'a': torch.tensor([1, 2]), 'b': x.round(), 'c': x.int(), 'd': x.long()}\n"
   "[k for k, ids in candidates.items() if accepted(ids)]",
   "The indices of an embedding must be integers, `long` (int64, what `torch.tensor([1, 2])` makes) or `int` "
   "(int32). `round()` gives whole numbers but keeps the float dtype, and it is the dtype that is checked.",
   shows="nn.Embedding(10, 4)(torch.tensor([1.0, 2.0]))")
_q("15_small_gpt.first_row_weights", "value",
   "Scores of all zeros `(4, 4)` plus the causal mask, softmax over each row: what is row 0 of the weights, "
   "rounded to 2 decimals (a list of 4 numbers)?",
   "mask = torch.zeros(4, 4).masked_fill(~torch.ones(4, 4, dtype=torch.bool).tril(), float('-inf'))\n"
   "[round(w, 2) for w in torch.softmax(torch.zeros(4, 4) + mask, dim=-1)[0].tolist()]",
   "Row 0 is the first position: it may attend only to itself (the diagonal), so its one remaining score gets "
   "all the weight, [1.0, 0.0, 0.0, 0.0]. Row 3 may see all four and spreads 0.25 over each.",
   shows="print(weights.round(decimals=2))")
_q("15_small_gpt.tied_param_count", "value",
   "`head = nn.Linear(4, 10, bias=False)`, then `both = nn.ModuleList([head, head])`: the same module twice. How "
   "many numbers does `sum(p.numel() for p in both.parameters())` count?",
   "head = nn.Linear(4, 10, bias=False)\n"
   "sum(p.numel() for p in nn.ModuleList([head, head]).parameters())",
   "40: both entries hold the same Parameter object, and `parameters()` lists each Parameter once, however many "
   "modules reach it. Two separate (10, 4) weights would count 80.",
   shows='print("the same module twice:", sum(p.numel() for p in both.parameters()))')

# ---------------------------------------------------------------------- 16 capstone on real files
_q("16_capstone_files.kept_epoch", "value",
   "Validation losses by epoch (epochs numbered from 1): `[0.9, 0.8, 0.7, 0.72, 0.71, 0.75]`. Which epoch's weights "
   "do you keep, judged by validation loss?",
   "val_losses = [0.9, 0.8, 0.7, 0.72, 0.71, 0.75]\nval_losses.index(min(val_losses)) + 1",
   "Epoch 3: the lowest validation loss. The last epoch (6) is the worst of the last four; stopping is when, "
   "keeping is which. With a patience of 3, training stops after epoch 6 and reloads epoch 3's copy.",
   shows='print("kept epoch:", val_losses.index(min(val_losses)) + 1)')
_q("16_capstone_files.uint8_overflow", "value",
   "What is `(torch.tensor([200], dtype=torch.uint8) + 100).item()`?",
   "(torch.tensor([200], dtype=torch.uint8) + 100).item()",
   "44: a Python int added to a uint8 tensor keeps the tensor's dtype, and 300 wraps around 256. Raw pixels "
   "are uint8, so a model that takes them casts to float (`images.float()`) before any arithmetic.",
   shows='print((torch.tensor([200], dtype=torch.uint8) + 100).item(), "- wrapped around 256; as floats:",')
_q("16_capstone_files.float_into_uint8_program", "value",
   "A program exported with a `uint8` example of shape (2, 1, 28, 28) and a dynamic batch raises for the "
   "float images of a user's own preprocessing. Which inputs does `shipped` accept: a "
   "`torch.zeros(3, 1, 28, 28)`, b `torch.zeros(3, 1, 28, 28, dtype=torch.uint8)`, c "
   "`torch.zeros(8, 1, 28, 28, dtype=torch.uint8)`, d `torch.zeros(3, 1, 32, 32, dtype=torch.uint8)`? "
   "Answer with the list of letters in order, such as `['c']`.",
   "class Scaled(nn.Module):\n"
   "    def forward(self, x):\n"
   "        return x.float().mean(dim=(1, 2, 3))\n"
   "program = torch.export.export(Scaled(), (torch.zeros(2, 1, 28, 28, dtype=torch.uint8),),\n"
   "                              dynamic_shapes=({0: torch.export.Dim('batch')},))\n"
   "shipped = program.module()\n"
   "def runs(x):\n"
   "    try:\n"
   "        shipped(x)\n"
   "    except (RuntimeError, AssertionError, ValueError):\n"
   "        return False\n"
   "    return True\n"
   "options = {'a': torch.zeros(3, 1, 28, 28), 'b': torch.zeros(3, 1, 28, 28, dtype=torch.uint8),\n"
   "           'c': torch.zeros(8, 1, 28, 28, dtype=torch.uint8), 'd': torch.zeros(3, 1, 32, 32, dtype=torch.uint8)}\n"
   "[k for k, x in options.items() if runs(x)]",
   "An exported program checks its inputs against the example it was exported with: the dtype (a float "
   "batch raises `Tensor dtype mismatch! Expected: Byte, Got: float`, a) and every size that was not "
   "declared dynamic (32 x 32 images, d). The batch was declared dynamic, so 3 or 8 images pass (b, c). "
   "Loud is good: the float images would have been preprocessed twice.",
   shows="shipped(torch.zeros(3, 1, 28, 28))")
