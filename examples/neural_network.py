"""A small neural network trained with the PyTorch-style Tensor API (`import autodiff as torch`).

    python examples/neural_network.py [--quick]

Tutorial: docs/tutorials/neural_network.md.
"""

import sys

import numpy as np

import autodiff as torch
import autodiff.numpy as anp


class MLP:
    """tanh network 1 -> hidden -> hidden -> 1; parameters are leaf tensors."""

    def __init__(self, hidden=32, seed=0):
        rng = np.random.default_rng(seed)
        sizes = [1, hidden, hidden, 1]
        self.params = []
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            w = rng.normal(size=(fan_in, fan_out)) / np.sqrt(fan_in)
            self.params += [
                torch.tensor(w, requires_grad=True),
                torch.zeros(fan_out, requires_grad=True),
            ]

    def __call__(self, x):
        *hidden, (w, b) = zip(self.params[::2], self.params[1::2])
        for w_i, b_i in hidden:
            x = anp.tanh(x @ w_i + b_i)
        return x @ w + b


def train(model, x, y, epochs=500, lr=0.01):
    """Full-batch Adam; returns the loss history."""
    m = [torch.zeros_like(p) for p in model.params]
    v = [torch.zeros_like(p) for p in model.params]
    history = []
    for t in range(1, epochs + 1):
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        history.append(loss.item())
        with torch.no_grad():
            for i, p in enumerate(model.params):
                m[i] = 0.9 * m[i] + 0.1 * p.grad
                v[i] = 0.999 * v[i] + 0.001 * p.grad**2
                p -= lr * (m[i] / (1 - 0.9**t)) / ((v[i] / (1 - 0.999**t)) ** 0.5 + 1e-8)
                p.grad = None
    return history


def make_data(n=64, seed=1):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-np.pi, np.pi, (n, 1)), axis=0)
    return torch.tensor(x), torch.tensor(np.sin(2 * x) + 0.05 * rng.normal(size=(n, 1)))


def main(quick: bool = False) -> None:
    x, y = make_data()
    model = MLP(hidden=8 if quick else 32)
    history = train(model, x, y, epochs=50 if quick else 1000)
    print(f"mean squared error: {history[0]:.4f} -> {history[-1]:.4f}")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
