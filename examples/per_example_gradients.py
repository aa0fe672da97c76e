"""Per-example gradients with vmap(grad), their norms, and clipping (as in DP-SGD).

    python examples/per_example_gradients.py [--quick]

Tutorial: docs/tutorials/per_example_gradients.md.
"""

import sys

import numpy as np

import autodiff as ad
import autodiff.numpy as anp


def init_params(sizes, seed=0):
    rng = np.random.default_rng(seed)
    return [
        (rng.normal(size=(m, n)) / np.sqrt(m), np.zeros(n)) for m, n in zip(sizes[:-1], sizes[1:])
    ]


def predict(params, x):
    *hidden, (w, b) = params
    for w_i, b_i in hidden:
        x = anp.tanh(x @ w_i + b_i)
    return x @ w + b


def example_loss(params, x, label):
    """Cross-entropy of one example: x has shape (features,), label is an int."""
    logits = predict(params, x)
    return anp.log(anp.sum(anp.exp(logits))) - logits[label]


per_example_grads = ad.vmap(ad.grad(example_loss), in_axes=(None, 0, 0))


def gradient_norms(grads):
    """One norm per example over all parameters (grads: pytree with a leading batch axis)."""
    leaves = ad.tree_leaves(grads)
    return np.sqrt(sum(np.sum(leaf.reshape(len(leaf), -1) ** 2, axis=1) for leaf in leaves))


def clipped_mean_gradient(grads, max_norm):
    """Clip each example's gradient to max_norm, then average (the DP-SGD aggregation)."""
    scale = np.minimum(1.0, max_norm / (gradient_norms(grads) + 1e-12))
    return ad.tree_map(lambda g: np.tensordot(scale, g, axes=1) / len(scale), grads)


def make_data(n, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    labels = (x[:, 0] + x[:, 1] ** 2 > 1).astype(int) + (x[:, 2] > 1)
    return x, labels


def main(quick: bool = False) -> None:
    x, labels = make_data(16 if quick else 256)
    params = init_params([4, 16, 3])
    grads = per_example_grads(params, x, labels)
    loop = [ad.grad(example_loss)(params, x[i], labels[i]) for i in range(3)]
    agree = all(np.allclose(grads[0][0][i], loop[i][0][0]) for i in range(3))
    norms = gradient_norms(grads)
    clipped = clipped_mean_gradient(grads, max_norm=1.0)
    print(f"per-example gradient of w1: {grads[0][0].shape}, matches a loop: {agree}")
    print(f"norms: min {norms.min():.3f}, median {np.median(norms):.3f}, max {norms.max():.3f}")
    clipped_norm = gradient_norms(ad.tree_map(lambda g: g[None], clipped))[0]
    print(f"clipped mean gradient norm: {clipped_norm:.3f}")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
