"""Op table: `checkpoint` under its policies and `checkpoint_name` — the function without
checkpoint as the reference, so every check (derivatives to order 2, vmap against a loop,
per-example pullbacks, jit on both backends) also runs the rematerialization: the staged
`remat` equation, the values it saves (`remat_saved`) and the optimization barrier."""

import numpy as np
from optable import OpCase

import autodiff as ad
import autodiff.numpy as anp

cp = ad.checkpoint_policies
# (its own generator: drawing from optable's shared one would change every later family's values)
_rng = np.random.default_rng(13)


def arr(*shape):
    return _rng.uniform(-1.5, 1.5, size=shape)


def _block(m, w, x):
    name = ad.checkpoint_name if m is anp else (lambda v, _: v)
    h = name(m.tanh(x @ w), "h")
    return m.sin(h) @ w.T * m.sum(x * x)


POLICIES = {
    "default": None,
    "everything": cp.everything_saveable,
    "dots": cp.dots_saveable,
    "dots_no_batch": cp.dots_with_no_batch_dims_saveable,
    "names": cp.save_only_these_names("h"),
    "not_names": cp.save_any_names_but_these("h"),
}


def _case(label, policy):
    f = ad.checkpoint(lambda w, x: _block(anp, w, x), policy=policy)
    return OpCase(
        f"checkpoint-{label}", f, (arr(3, 4), arr(2, 3)), ref=lambda w, x: _block(np, w, x)
    )


CASES = [_case(label, policy) for label, policy in POLICIES.items()]
CASES += [
    OpCase(
        "checkpoint_name(2, 3)",
        lambda x: ad.checkpoint_name(x, "x") * anp.exp(x),
        (arr(2, 3),),
        ref=lambda x: x * np.exp(x),
    ),
    OpCase(
        "checkpoint-einsum-batched(2, 3, 3)",
        ad.checkpoint(
            lambda x: anp.einsum("bij,bjk->bik", anp.sin(x), x),
            policy=cp.dots_with_no_batch_dims_saveable,
        ),
        (arr(2, 3, 3),),
        ref=lambda x: np.einsum("bij,bjk->bik", np.sin(x), x),
    ),
]
