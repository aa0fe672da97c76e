"""autodiff: forward- and reverse-mode automatic differentiation for NumPy code.

Functional transforms in the JAX style (`grad`, `vjp`, ...) and a PyTorch-style
`Tensor`, on one tracer core. `import autodiff.numpy as anp` for the NumPy namespace.

Example:
    >>> import autodiff as ad, autodiff.numpy as anp
    >>> float(ad.grad(lambda x: anp.sin(x) * x)(0.0))
    0.0
"""

from autodiff import (
    _tensor_methods,  # noqa: F401  (installs Tensor's operators and methods: the one place)
    autograd,
    numpy,
)
from autodiff.autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from autodiff.control import cond, fori_loop, scan, switch, while_loop
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
from autodiff.core.dtypes import float0
from autodiff.core.errors import ConcretizationError
from autodiff.custom import checkpoint, custom_jvp, custom_vjp, remat
from autodiff.factories import (
    arange,
    as_tensor,
    empty,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    randn,
    tensor,
    zeros,
    zeros_like,
)
from autodiff.forward_ad import jvp
from autodiff.jacobians import hessian, hvp, jacfwd, jacrev
from autodiff.ops.elementwise import stop_gradient
from autodiff.reverse import grad, linearize, value_and_grad, vjp
from autodiff.staging.api import jit, make_graph

# torch's functions: `autodiff.tanh(t)`, `autodiff.cat([...])`, ... as `torch.<name>`; not in
# `__all__`, so that a star import does not shadow the builtins sum, abs and pow.
from autodiff.torch_compat import (  # noqa: F401
    abs,
    cat,
    ceil,
    clamp,
    cos,
    cosh,
    exp,
    expm1,
    floor,
    log,
    log1p,
    matmul,
    maximum,
    mean,
    minimum,
    mm,
    pow,
    prod,
    reciprocal,
    relu,
    sigmoid,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    stack,
    sum,
    tan,
    tanh,
    trunc,
    unbind,
    where,
)
from autodiff.vmap import vmap

__version__ = "0.1.0"

__all__ = [
    "ConcretizationError",
    "cond",
    "fori_loop",
    "jit",
    "make_graph",
    "scan",
    "switch",
    "while_loop",
    "arange",
    "checkpoint",
    "custom_jvp",
    "custom_vjp",
    "remat",
    "as_tensor",
    "empty",
    "enable_grad",
    "eye",
    "float0",
    "from_numpy",
    "full",
    "full_like",
    "inference_mode",
    "is_grad_enabled",
    "linspace",
    "no_grad",
    "ones",
    "ones_like",
    "rand",
    "randn",
    "set_grad_enabled",
    "zeros",
    "zeros_like",
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
