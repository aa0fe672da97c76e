"""autodiff.nn: the torch.nn subset a ported training script needs (Module, Parameter, Linear,
Sequential, activations, losses, `functional`, `init`, `utils`).

Written with autodiff.numpy ops and the torch face's autograd (the package's top layer), so
every module differentiates, batches and stages like any other autodiff code.
"""

from autodiff.nn import functional, init, utils
from autodiff.nn.activation import (
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
from autodiff.nn.container import ModuleDict, ModuleList, Sequential
from autodiff.nn.layers import Dropout, Embedding, Flatten, Identity, LayerNorm, Linear
from autodiff.nn.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from autodiff.nn.module import Module
from autodiff.nn.parameter import Parameter

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CrossEntropyLoss",
    "Dropout",
    "ELU",
    "Embedding",
    "Flatten",
    "GELU",
    "HuberLoss",
    "Identity",
    "L1Loss",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
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
