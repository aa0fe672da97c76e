"""autodiff.nn: the torch.nn subset a ported training script needs (Module, Parameter, Linear,
Sequential, Conv1d/2d/3d, pools, BatchNorm/InstanceNorm/GroupNorm, activations, losses,
`functional`, `init`, `utils`).

Written with autodiff.numpy ops and the torch face's autograd (the package's top layer), so
every module differentiates, batches and stages like any other autodiff code.
"""

from autodiff.torch.nn import functional, init, utils
from autodiff.torch.nn.activation import (
    ELU,
    GELU,
    LeakyReLU,
    LogSoftmax,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from autodiff.torch.nn.container import ModuleDict, ModuleList, Sequential
from autodiff.torch.nn.conv import Conv1d, Conv2d, Conv3d
from autodiff.torch.nn.layers import Dropout, Embedding, Flatten, Identity, LayerNorm, Linear
from autodiff.torch.nn.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from autodiff.torch.nn.module import Module
from autodiff.torch.nn.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
)
from autodiff.torch.nn.parallel import DataParallel
from autodiff.torch.nn.parameter import Parameter
from autodiff.torch.nn.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
)

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "DataParallel",
    "CrossEntropyLoss",
    "Dropout",
    "ELU",
    "Embedding",
    "Flatten",
    "GELU",
    "GroupNorm",
    "HuberLoss",
    "Identity",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "L1Loss",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "LogSoftmax",
    "MSELoss",
    "Module",
    "ModuleDict",
    "ModuleList",
    "NLLLoss",
    "Parameter",
    "ReLU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SmoothL1Loss",
    "Softmax",
    "Softplus",
    "Tanh",
    "functional",
    "init",
    "utils",
]
