"""Exercises of 08_convolutions: output sizes, a convolution and a max-pool by hand, parameter
counts, receptive fields, and a small VGG-style network to a spec.

Rules the lesson states ("without `F.conv2d` / `nn.Conv2d`", "without `F.max_pool2d` /
`nn.MaxPool2d`") are declared as ``Exercise.forbid`` patterns: the grading framework's watch sees
every torch function the answer calls, however it is reached (in the instructor's grader, where
the answer runs).
"""

from . import conv_output_size, conv2d_by_hand, conv_param_count, max_pool_by_hand, receptive_field, small_vgg  # noqa: F401 (in the notebook's order)
