"""Op table: elementwise functions (unary on several shapes, binary with broadcasting)."""

import numpy as np
from optable import OpCase, arr, pos

import autodiff.numpy as anp

SHAPES = [(), (5,), (3, 4)]


def _odd_halves(*shape):
    """Values near the odd halves (+-0.5, +-1.5): at least 0.3 away from `_integers`."""
    return np.choose(np.random.default_rng(1).integers(0, 4, shape), [-1.5, -0.5, 0.5, 1.5]) + arr(
        *shape, low=-0.1, high=0.1
    )


def _integers(*shape):
    return np.choose(np.random.default_rng(2).integers(0, 3, shape), [-1.0, 0.0, 1.0]) + arr(
        *shape, low=-0.1, high=0.1
    )


# name, domain sampler (arguments built per shape)
UNARY = {
    "negative": arr,
    "exp": arr,
    "exp2": arr,
    "expm1": arr,
    "log": pos,
    "log2": pos,
    "log10": pos,
    "log1p": pos,
    "sqrt": pos,
    "cbrt": pos,
    "square": arr,
    "reciprocal": pos,
    "sin": arr,
    "cos": arr,
    "tan": lambda *s: arr(*s, low=-1.2, high=1.2),
    "arcsin": lambda *s: arr(*s, low=-0.8, high=0.8),
    "arccos": lambda *s: arr(*s, low=-0.8, high=0.8),
    "arctan": arr,
    "sinh": arr,
    "cosh": arr,
    "tanh": arr,
    "arcsinh": arr,
    "arccosh": lambda *s: pos(*s, low=1.2, high=3.0),
    "arctanh": lambda *s: arr(*s, low=-0.8, high=0.8),
    "absolute": lambda *s: np.sign(arr(*s)) * pos(*s),
    "real": arr,
    "conjugate": arr,
}

BINARY = {
    "add": (arr, arr),
    "subtract": (arr, arr),
    "multiply": (arr, arr),
    "divide": (arr, pos),
    "power": (pos, arr),
    "arctan2": (arr, pos),
    "hypot": (arr, arr),
    "logaddexp": (arr, arr),
    "logaddexp2": (arr, arr),
    # max-like ops: arguments kept apart so central differences never straddle a kink
    "maximum": (_odd_halves, _integers),
    "minimum": (_odd_halves, _integers),
    "fmax": (_odd_halves, _integers),
    "fmin": (_odd_halves, _integers),
    "remainder": (
        lambda *s: pos(*s, low=0.1, high=0.9) + 2.0,
        lambda *s: pos(*s, low=1.05, high=1.9),
    ),
    "fmod": (lambda *s: pos(*s, low=0.1, high=0.9) + 2.0, lambda *s: pos(*s, low=1.05, high=1.9)),
}
# broadcasting pairs: (x shape, y shape)
PAIRS = [((), ()), ((4,), (4,)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), ()), ((), (3,))]

CASES = []
for name, sample in UNARY.items():
    for shape in SHAPES:
        CASES.append(
            OpCase(f"{name}{shape}", getattr(anp, name), (sample(*shape),), ref=getattr(np, name))
        )
for name, (sx, sy) in BINARY.items():
    for shx, shy in PAIRS:
        CASES.append(
            OpCase(
                f"{name}{shx}{shy}", getattr(anp, name), (sx(*shx), sy(*shy)), ref=getattr(np, name)
            )
        )

# Ops with Python-number arguments, operators and composites.
x34 = arr(3, 4)
CASES += [
    OpCase("pow_int", lambda x: x**3, (arr(5),), ref=lambda x: x**3),
    OpCase("pow_half", lambda x: x**0.5, (pos(5),), ref=lambda x: x**0.5),
    OpCase(
        "pow_zero", lambda x: anp.power(x, 0.0) * x, (arr(5),), ref=lambda x: np.power(x, 0.0) * x
    ),
    OpCase("rpow", lambda x: 2.0**x, (arr(5),), ref=lambda x: 2.0**x),
    OpCase(
        "scalar_ops",
        lambda x: (1.0 - x) / 2.0 + 3.0 * x - x / (x * x + 1.0),
        (x34,),
        ref=lambda x: (1.0 - x) / 2.0 + 3.0 * x - x / (x * x + 1.0),
    ),
    OpCase(
        "where",
        lambda x, y: anp.where(x > 0, x, y),
        (arr(3, 4), arr(4)),
        ref=lambda x, y: np.where(x > 0, x, y),
    ),
    OpCase(
        "where_scalar",
        lambda x: anp.where(x > 0, x * x, 0.0),
        (arr(6),),
        ref=lambda x: np.where(x > 0, x * x, 0.0),
    ),
    OpCase(
        "clip",
        lambda x: anp.clip(x, -1.0, 1.0),
        (arr(10) * 1.7,),
        ref=lambda x: np.clip(x, -1.0, 1.0),
    ),
    OpCase(
        "clip_arrays",
        lambda x, lo: anp.clip(x, lo, 1.5),
        (arr(3, 4), arr(4) - 1.0),
        ref=lambda x, lo: np.clip(x, lo, 1.5),
    ),
    OpCase(
        "rounding_zero_grad",
        lambda x: (
            anp.floor(x * 3.0)
            + anp.ceil(x)
            + anp.round(x, 1)
            + anp.trunc(x)
            + anp.rint(x)
            + anp.sign(x)
            + x
        ),
        (np.array([0.33, 0.71, 1.13, -0.42, -1.77]),),
        ref=lambda x: (
            np.floor(x * 3.0)
            + np.ceil(x)
            + np.round(x, 1)
            + np.trunc(x)
            + np.rint(x)
            + np.sign(x)
            + x
        ),
    ),
    OpCase(
        "mixed_dtype_scalar_array",
        lambda x: x * np.float32(2.0),
        (arr(4),),
        ref=lambda x: x * np.float32(2.0),
    ),
    OpCase(
        "neg_abs_ops",
        lambda x: -abs(x) + (+x),
        (np.array([0.5, -1.5, 2.0]),),
        ref=lambda x: -abs(x) + (+x),
    ),
]

# The fused backward primitives (their own rules are checked like any op).
from autodiff.ops.elementwise import log1p_backward, tanh_backward  # noqa: E402

CASES += [
    OpCase(
        "tanh_backward",
        tanh_backward,
        (arr(3, 4), arr(3, 4, low=-0.9, high=0.9)),
        ref=lambda g, y: g * (1 - y * y),
    ),
    OpCase(
        "tanh_backward_bcast",
        tanh_backward,
        (arr(4), arr(3, 4, low=-0.9, high=0.9)),
        ref=lambda g, y: g * (1 - y * y),
    ),
    OpCase("log1p_backward", log1p_backward, (arr(5), pos(5)), ref=lambda g, x: g / (1 + x)),
]
