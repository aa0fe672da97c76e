"""`autodiff.nn.utils`: gradient clipping, parameters as one flat vector, and
`stateless.functional_call` (torch.nn.utils's).

Builds on autodiff.nn's Module and Parameter and the torch face's Tensor methods.
"""

from autodiff.torch.nn.utils import stateless
from autodiff.torch.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_
from autodiff.torch.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "parameters_to_vector",
    "stateless",
    "vector_to_parameters",
]
