"""`autodiff.compile` on torch-style training steps (issue 37), beside torch eager and
torch.compile: first call and steady state of one step.

Run (from the repository's root):

    python -m benchmarks.bench_torch_compile                     # every workload
    python -m benchmarks.bench_torch_compile --quick             # shorter loops, no torch.compile
    python -m benchmarks.bench_torch_compile --workload cnn_sgd  # one workload (repeatable)

Workloads (float64, one thread):
- `mlp_sgd`: MLP 64-256-256-10 (ReLU), batch 128, cross-entropy, SGD (lr 0.01);
- `small_adam`: MLP 16-32-32-1 (tanh), batch 64, MSE, Adam (lr 1e-3);
- `cnn_sgd`: conv 3x3 1->8 channels, ReLU, 2x2 max pooling, linear 1352->10, on a batch of
  32 images 1x28x28, cross-entropy, SGD (lr 0.01);
- `mlp_dropout_ln`: MLP 64-256-256-10, each hidden layer Linear, LayerNorm, ReLU,
  Dropout(0.1), train mode, batch 128, cross-entropy, SGD (lr 0.01). The libraries' dropout
  streams differ: the rows compare time only (tests/test_torch_compile_cnn.py checks
  autodiff's compiled step against its eager one).

Columns: autodiff eager; autodiff.compile (the model and `optimizer.step` compiled), its first
call (staging and the first run; the optimizer's first step, which creates its state, runs
eagerly) and steady state; autodiff.compile of the whole step (the function doing
zero_grad, forward, loss, backward and the optimizer's step compiled as one graph:
docs/guide/compile.md), first call (its first two calls: the first, creating the
optimizer's state, runs eagerly) and steady state; torch eager; torch.compile (inductor,
the model compiled; the optimizer step eager) first call and steady state. Steady state is
the minimum over several loops of the time per step, after the first calls (autodiff's
default executor compiles with Numba in the background: the loops start once every graph's
compile has swapped in). Times on a shared machine are noisy; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from benchmarks.tables import format_table, format_time

# name: (layer sizes, batch, hidden layers' kind, optimizer); an input of shape (batch,
# *sizes[0]): a tuple is an image's (channels, height, width)
WORKLOADS = {
    "mlp_sgd": ((64, 256, 256, 10), 128, "relu", "sgd"),
    "small_adam": ((16, 32, 32, 1), 64, "tanh", "adam"),
    "cnn_sgd": (((1, 28, 28), 8, 10), 32, "conv", "sgd"),
    "mlp_dropout_ln": ((64, 256, 256, 10), 128, "ln-dropout", "sgd"),
}


def _cnn(lib, sizes):
    (channels, height, width), filters, classes = sizes
    flat = filters * ((height - 2) // 2) * ((width - 2) // 2)
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(channels, filters, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(flat, classes),
    )


def _hidden(lib, kind: str, width: int) -> list:
    if kind == "ln-dropout":
        return [lib.nn.LayerNorm(width), lib.nn.ReLU(), lib.nn.Dropout(0.1)]
    return [lib.nn.ReLU() if kind == "relu" else lib.nn.Tanh()]


def _model(lib, sizes, kind):
    if kind == "conv":
        return _cnn(lib, sizes).double()
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(lib.nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers += _hidden(lib, kind, b)
    return lib.nn.Sequential(*layers).double()


def _step_fn(lib, model, optimizer_name, batch, sizes, compile_step=False, whole=False):
    rng = np.random.default_rng(0)
    features = sizes[0] if isinstance(sizes[0], tuple) else (sizes[0],)
    x = lib.tensor(rng.standard_normal((batch, *features)))
    if optimizer_name == "sgd":
        y = lib.tensor(rng.integers(0, sizes[-1], batch))
        loss_fn = lib.nn.CrossEntropyLoss()
        opt = lib.optim.SGD(model.parameters(), lr=0.01)
    else:
        y = lib.tensor(rng.standard_normal((batch, sizes[-1])))
        loss_fn = lib.nn.MSELoss()
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)

    update = lib.compile(opt.step) if compile_step else opt.step

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        update()
        return loss

    return lib.compile(step) if whole else step


def _steady(step, seconds: float, loops: int = 7) -> float:
    """The minimum over `loops` loops of the time per step (each loop ~seconds / loops)."""
    n = 1
    start = time.perf_counter()
    step()
    once = max(time.perf_counter() - start, 1e-6)
    n = max(1, int(seconds / loops / once))
    best = float("inf")
    for _ in range(loops):
        start = time.perf_counter()
        for _ in range(n):
            step()
        best = min(best, (time.perf_counter() - start) / n)
    return best


def _first(make_step) -> tuple:
    step = make_step()
    start = time.perf_counter()
    step()
    return time.perf_counter() - start, step


def _autodiff_rows(name: str, seconds: float) -> dict:
    import autodiff
    from autodiff.staging.call import wait_for_tier_up

    sizes, batch, kind, opt = WORKLOADS[name]
    out = {}
    autodiff.manual_seed(0)
    eager = _step_fn(autodiff, _model(autodiff, sizes, kind), opt, batch, sizes)
    out["autodiff eager"] = _steady(eager, seconds)

    def make():
        model = autodiff.compile(_model(autodiff, sizes, kind))
        return _step_fn(autodiff, model, opt, batch, sizes, compile_step=True)

    out["autodiff.compile first"], step = _first(make)
    for _ in range(3):  # (each graph's background Numba compile swapped in: the forward's,
        step()  # the backward's, the optimizer's; each starts at the graph's first calls)
        wait_for_tier_up(timeout=300.0)
    out["autodiff.compile steady"] = _steady(step, seconds)

    def make_whole():
        model = _model(autodiff, sizes, kind)
        step = _step_fn(autodiff, model, opt, batch, sizes, whole=True)
        step()  # (the first call: eager, it creates the optimizer's state)
        return step

    start = time.perf_counter()
    _, step = _first(make_whole)
    out["compile(step) first"] = time.perf_counter() - start
    for _ in range(3):
        step()
        wait_for_tier_up(timeout=300.0)
    out["compile(step) steady"] = _steady(step, seconds)
    return out


def _torch_rows(name: str, seconds: float, with_compile: bool) -> dict:
    import torch

    torch.set_num_threads(1)
    sizes, batch, kind, opt = WORKLOADS[name]
    out = {}
    torch.manual_seed(0)
    eager = _step_fn(torch, _model(torch, sizes, kind), opt, batch, sizes)
    out["torch eager"] = _steady(eager, seconds)
    if with_compile:

        def make():
            model = torch.compile(_model(torch, sizes, kind))
            return _step_fn(torch, model, opt, batch, sizes)

        out["torch.compile first"], step = _first(make)
        out["torch.compile steady"] = _steady(step, seconds)
    return out


def _products_alone(seconds: float) -> float:
    """The time of `mlp_sgd`'s matrix products alone (NumPy's matmul, one thread): the
    forward's three, and the backward's weight gradients and the two hidden layers'
    cotangents (the input needs none)."""
    (n_in, h1, h2, n_out), batch, _, _ = WORKLOADS["mlp_sgd"]
    rng = np.random.default_rng(0)
    x, g1 = rng.standard_normal((batch, n_in)), rng.standard_normal((batch, h1))
    a1, g2 = rng.standard_normal((batch, h1)), rng.standard_normal((batch, h2))
    a2, g3 = rng.standard_normal((batch, h2)), rng.standard_normal((batch, n_out))
    w1, w2 = rng.standard_normal((n_in, h1)), rng.standard_normal((h1, h2))
    w3 = rng.standard_normal((h2, n_out))

    def products():
        x @ w1, a1 @ w2, a2 @ w3  # (forward)
        a2.T @ g3, g3 @ w3.T, a1.T @ g2, g2 @ w2.T, x.T @ g1  # (backward)

    return _steady(products, seconds)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short loops, no torch.compile")
    parser.add_argument(
        "--workload", action="append", choices=list(WORKLOADS), help="run this workload only"
    )
    args = parser.parse_args(argv)
    seconds = 0.5 if args.quick else 2.0
    columns = [
        "autodiff eager",
        "autodiff.compile first",
        "autodiff.compile steady",
        "compile(step) first",
        "compile(step) steady",
        "torch eager",
        "torch.compile first",
        "torch.compile steady",
    ]
    rows = []
    for name in args.workload or WORKLOADS:
        result = _autodiff_rows(name, seconds)
        result |= _torch_rows(name, seconds, not args.quick)
        rows.append([name] + [format_time(result[c]) if c in result else "-" for c in columns])
        against = result.get("torch.compile steady")
        for compiled in (result["autodiff.compile steady"], result["compile(step) steady"]):
            rows[-1].append(f"{compiled / result['torch eager']:.2f}x")
            rows[-1].append("-" if against is None else f"{compiled / against:.2f}x")
    ratios = ["compiled / torch eager", "compiled / torch.compile"]
    ratios += ["step / torch eager", "step / torch.compile"]
    print(format_table(["workload"] + columns + ratios, rows))
    if "mlp_sgd" in (args.workload or WORKLOADS):
        floor = _products_alone(seconds)
        print(f"mlp_sgd's matrix products alone (NumPy, one thread): {format_time(floor)}")


if __name__ == "__main__":
    main()
