"""Exercises of 02_autograd.

Several checks diagnose *behaviour*, not just outputs: the gradient-descent check (descent on a
model's input) watches every input the learner's loop feeds the model, recognises the step rule
it used (wrong sign, gradients never cleared, errors averaged, updates recorded in the graph) and
checks that the model's weights come back as they went in (values, ``.grad``, ``requires_grad``);
the Jacobian check calls the answer twice on the same tensor to catch gradients accumulating in the
caller's ``.grad``; the custom ``Function`` check compares its backward with the analytic
derivative under a random upstream gradient and then runs ``gradcheck``. Known error messages a learner's code raises
(``Boolean value of Tensor ... is ambiguous``, the in-place-on-a-leaf error, ``does not
require grad``) are turned into named mistakes with targeted advice.
"""

# the notebook's order is the registration order
from . import (  # noqa: E402, F401
    dfdx,
    jacobian,
    huber,
    hvp,
    gradient_is_wrong,
    my_silu,
    gradient_descent,
)
