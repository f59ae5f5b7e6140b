"""Exercises of 02_autograd.

Several checks diagnose *behaviour*, not just outputs: the gradient-descent check watches every
point the learner's loop evaluates ``f`` at and recognises the step rule it used (wrong sign,
gradients never cleared, updates recorded in the graph); the VJP check calls the answer twice
on the same tensor to catch gradients accumulating in the caller's ``.grad``; the custom
``Function`` check compares its backward with the analytic derivative under a random upstream
gradient and then runs ``gradcheck``. Known error messages a learner's code raises
(``Boolean value of Tensor ... is ambiguous``, the in-place-on-a-leaf error, ``does not
require grad``) are turned into named mistakes with targeted advice.
"""

# the notebook's order is the registration order
from . import (  # noqa: E402, F401
    dfdx,
    vjp,
    huber,
    hvp,
    finite_difference_grad,
    my_silu,
    gradient_descent,
)
