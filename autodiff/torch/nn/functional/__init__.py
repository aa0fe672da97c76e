"""`autodiff.nn.functional`: torch.nn.functional's activations, losses and layers as functions.

Each is a composite of autodiff ops, so it differentiates (to any order), batches under
`vmap` and stages under `jit`; the formulas are torch's (same branches, clamps and
reductions), so values agree with torch's to rounding.

The functions are written by family (activations, layers, losses, normalization,
convolution, pooling), one module each; this module is their namespace.
"""

from autodiff.torch.nn.functional._helpers import legacy_reduction as legacy_reduction
from autodiff.torch.nn.functional.activations import (
    dropout,
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)
from autodiff.torch.nn.functional.convolution import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
)
from autodiff.torch.nn.functional.layers import (
    embedding,
    layer_norm,
    linear,
    normalize,
    one_hot,
    pad,
)
from autodiff.torch.nn.functional.losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
    threshold,
)
from autodiff.torch.nn.functional.normalization import batch_norm, group_norm, instance_norm
from autodiff.torch.nn.functional.pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "batch_norm",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "cross_entropy",
    "dropout",
    "elu",
    "embedding",
    "gelu",
    "group_norm",
    "huber_loss",
    "instance_norm",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "mse_loss",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "relu",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "softmax",
    "softplus",
    "tanh",
    "threshold",
]
