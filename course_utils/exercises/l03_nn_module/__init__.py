"""Exercises of 03_nn_module: a module to fix (Tower), one rebuilt from its checkpoint (MLP), a
custom layer with its own parameter (RMSNorm), nn.Linear rebuilt from nn.Parameter, a buffer
(RunningMean), freezing a sub-network, an init function for ``model.apply``, and predicting in
eval mode without a graph.

Class exercises (``kind="class"``) get a custom ``run``: it builds the learner's class from the
case's constructor arguments (turning "cannot assign ... before Module.__init__() call" into a
named mistake), checks what the module registered (parameters, buffers, ``state_dict``,
dtypes, initial values), gives the learner's module and the reference the same weights drawn
from the case's seed, and returns the forward output on a random input for the usual
comparison. Everything random comes from a ``torch.Generator`` seeded by the case; module
constructors that draw their default initialisation from the global RNG run inside the check,
whose RNG state the framework restores.
"""

from . import (  # noqa: F401 (in the notebook's order)
    tower, mlp, rms_norm, linear, running_mean, freeze_backbone, init_weights, predict_proba,
)
