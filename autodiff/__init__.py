"""autodiff: forward- and reverse-mode automatic differentiation for NumPy code.

Functional transforms in the JAX style (`grad`, `vjp`, ...) and a PyTorch-style
`Tensor`, on one tracer core. `import autodiff.numpy as anp` for the NumPy namespace.

Example:
    >>> import autodiff as ad, autodiff.numpy as anp
    >>> float(ad.grad(lambda x: anp.sin(x) * x)(0.0))
    0.0
"""
from autodiff import numpy  # noqa: F401  (installs Tensor's operators)
from autodiff.core import (
    EscapedTracerError,
    Tensor,
    TracerConversionError,
    register_pytree_node,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)
from autodiff import autograd  # noqa: F401
from autodiff.forward_ad import hvp, jvp, linearize
from autodiff.forward_ad.jacobian import hessian, jacfwd
from autodiff.ops.elementwise import stop_gradient
from autodiff.reverse import grad, value_and_grad, vjp
from autodiff.reverse.jacobian import jacrev
from autodiff.vmap import vmap


def tensor(data, dtype=None) -> Tensor:
    """A level-0 Tensor holding a copy of `data`.

    Example:
        >>> tensor([1.0, 2.0]).shape
        (2,)
    """
    import numpy as np

    return Tensor(np.array(data.primal() if isinstance(data, Tensor) else data, dtype=dtype))


__version__ = "0.1.0"

__all__ = [
    "EscapedTracerError",
    "Tensor",
    "TracerConversionError",
    "autograd",
    "grad",
    "hessian",
    "hvp",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "numpy",
    "register_pytree_node",
    "stop_gradient",
    "tensor",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
    "value_and_grad",
    "vjp",
    "vmap",
]
