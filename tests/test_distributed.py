"""Scale-out (autodiff/distributed): chunks of vmap / jacfwd / jacrev / hessian as tasks of an
executor, vmap over Dask arrays, jacrev(out="dask"), progress, and the faults: a user error,
a worker killed mid-Jacobian, KeyboardInterrupt while waiting.

The Dask tests share one LocalCluster (processes, 2 workers of 1 thread), started by a
module-scoped fixture and closed at the end; they are skipped where `distributed` is not
installed. Results are compared with the local ones bit for bit (same `chunk_size`: each
task runs what the local chunk runs).
"""

from __future__ import annotations

import _thread
import concurrent.futures
import logging
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import autodiff as ad
import autodiff.numpy as anp
from autodiff.autograd import functional as F
from autodiff.core.errors import TracerConversionError

RNG = np.random.default_rng(0)
A = RNG.standard_normal((24, 24)) / 5
X = RNG.standard_normal((60, 24))
W = RNG.standard_normal(24)


def f(x):
    return anp.tanh(A @ x) * anp.sin(x) + anp.sum(x**2)


def loss(w, x):
    return anp.log1p(anp.exp(-anp.dot(x, w))) + 0.1 * anp.sum(w**2)


def tree_f(p, x):
    return {"a": anp.tanh(p["w"] @ x), "b": (anp.sum(p["v"] * x), x[:3] ** 2)}


def in_worker() -> bool:
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return False
    return True


@pytest.fixture(scope="module")
def client():
    dd = pytest.importorskip("distributed")
    import cloudpickle

    # The workers get this module's functions by value (they need not import the tests).
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    import dask

    # (faster workers: see the guide "Scaling out with Dask", section Performance)
    fast = {
        "distributed.nanny.pre-spawn-environ.MALLOC_TOP_PAD_": 32 * 2**20,
        "distributed.worker.profile.enabled": False,
    }
    with dask.config.set(fast):
        cluster = dd.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.CRITICAL,
        )
    c = dd.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _equal(a, b) -> bool:
    la, da_ = ad.tree_flatten(a)
    lb, db = ad.tree_flatten(b)
    return da_ == db and all(
        np.asarray(x).dtype == np.asarray(y).dtype and np.array_equal(x, y) for x, y in zip(la, lb)
    )


# ---- Dask: results equal the local ones exactly --------------------------------------------


def test_jacobians_on_dask_equal_local(client):
    x = X[0]
    for chunk in (7, None):
        local = ad.jacrev(f, chunk_size=chunk)(x)
        assert _equal(ad.jacrev(f, chunk_size=chunk, executor=client)(x), local)
    assert _equal(ad.jacrev(f, chunk_size=5, executor=client)(x), ad.jacrev(f)(x))
    assert _equal(ad.jacfwd(f, chunk_size=7, executor=client)(x), ad.jacfwd(f, chunk_size=7)(x))
    h = lambda x: anp.sum(anp.sin(A @ x) ** 3)
    assert _equal(ad.hessian(h, chunk_size=6, executor=client)(x), ad.hessian(h)(x))
    # pytrees in and out, argnums, has_aux
    p = {"w": A[:5], "v": W}
    got = ad.jacrev(tree_f, argnums=(0, 1), chunk_size=3, executor=client)(p, x)
    assert _equal(got, ad.jacrev(tree_f, argnums=(0, 1), chunk_size=3)(p, x))
    aux = lambda x: (f(x), {"n": anp.sum(x)})
    got = ad.jacfwd(aux, has_aux=True, chunk_size=10, executor=client)(x)
    assert _equal(got, ad.jacfwd(aux, has_aux=True, chunk_size=10)(x))
    got = ad.jacrev(aux, has_aux=True, chunk_size=10, executor="dask")(x)  # the default client
    assert _equal(got, ad.jacrev(aux, has_aux=True, chunk_size=10)(x))


def test_vmap_on_dask_equals_local(client):
    per_example = ad.vmap(ad.grad(loss), in_axes=(None, 0), chunk_size=16)
    got = ad.vmap(ad.grad(loss), in_axes=(None, 0), chunk_size=16, executor=client)(W, X)
    assert _equal(got, per_example(W, X))
    # other axes, pytrees, keyword arguments (mapped along 0), Tensors in and out
    g = lambda a, b, scale=1.0: {"s": anp.sum(a * b) * scale, "t": (a - b) ** 2}
    kw = {"scale": np.linspace(1, 2, 8)}
    spec = {"in_axes": (1, None), "out_axes": {"s": 0, "t": 1}, "chunk_size": 5}
    got = ad.vmap(g, **spec, executor=client)(X[:8].T, W, **kw)
    assert _equal(got, ad.vmap(g, **spec)(X[:8].T, W, **kw))
    t = ad.tensor(X[:10])
    got = ad.vmap(lambda r: r.sum() * 2, executor=client, chunk_size=4)(t)
    assert isinstance(got, ad.Tensor) and np.array_equal(got.numpy(), X[:10].sum(1) * 2)


def test_jacrev_out_dask_leaves_blocks_on_workers(client):
    import dask.array as da
    from distributed import futures_of

    x = X[1]
    jac = ad.jacrev(f, chunk_size=5, executor=client, out="dask")(x)
    assert isinstance(jac, da.Array) and jac.shape == (24, 24) and jac.chunks[0][0] == 5
    assert len(futures_of(jac)) == 5  # computed and left on the workers
    assert np.array_equal(jac.compute(), ad.jacrev(f, chunk_size=5)(x))
    p = {"w": A[:5], "v": W}
    jac = ad.jacrev(tree_f, chunk_size=4, executor=client, out="dask")(p, x)
    assert all(isinstance(leaf, da.Array) for leaf in ad.tree_leaves(jac))
    local = ad.jacrev(tree_f, chunk_size=4)(p, x)
    assert _equal(ad.tree_map(lambda a: a.compute(), jac), local)
    with pytest.raises(ValueError, match='out="dask".*needs executor'):
        ad.jacrev(f, out="dask")(x)


# ---- Dask arrays through vmap ----------------------------------------------------------------


def test_vmap_over_dask_array_is_lazy_and_blockwise(client):
    import dask
    import dask.array as da

    Xd = da.from_array(X, chunks=(16, 24))
    G = ad.vmap(ad.grad(loss), in_axes=(None, 0))(W, Xd)
    assert isinstance(G, da.Array) and G.shape == (60, 24) and G.chunks[0] == (16, 16, 16, 12)
    assert np.array_equal(
        G.compute(), ad.vmap(ad.grad(loss), in_axes=(None, 0), chunk_size=16)(W, X)
    )
    assert np.allclose(
        G.mean(axis=0).compute(), ad.vmap(ad.grad(loss), in_axes=(None, 0))(W, X).mean(0)
    )

    # nothing is computed until asked: an input whose computation fails builds fine
    def explode():
        raise RuntimeError("computed too early")

    bad = da.from_delayed(dask.delayed(explode)(), shape=(60, 24), dtype=float)
    lazy = ad.vmap(ad.grad(loss), in_axes=(None, 0))(W, bad)
    assert isinstance(lazy, da.Array)
    with pytest.raises(RuntimeError, match="computed too early"):
        lazy.compute()


def test_vmap_over_dask_array_axes_and_mixing(client):
    import dask.array as da

    g = lambda a, b, c: {"s": anp.sum(a * b) + c, "t": anp.outer(a, b)[:2]}
    a = X[:10].T  # (24, 10): mapped along axis 1, chunked along both axes
    ad_ = da.from_array(a, chunks=(7, 4))
    b = X[10:20]  # (10, 24): a NumPy array mapped along 0, chunked like the Dask one
    cd = da.from_array(np.arange(24.0), chunks=5)  # an unmapped Dask array: whole in each block
    spec = {"in_axes": (1, 0, None), "out_axes": {"s": 0, "t": 2}}
    got = ad.vmap(g, **spec)(ad_, b, cd)
    assert got["t"].shape == (2, 24, 10) and got["t"].chunks[2] == (4, 4, 2)
    want = ad.vmap(g, **spec)(a, b, np.arange(24.0))
    assert all(
        np.allclose(x.compute(), y) for x, y in zip(ad.tree_leaves(got), ad.tree_leaves(want))
    )
    # chunk_size rechunks the mapped axis
    got = ad.vmap(ad.grad(loss), in_axes=(None, 0), chunk_size=25)(
        W, da.from_array(X, chunks=(7, 24))
    )
    assert got.chunks[0] == (25, 25, 10)
    # errors: sizes, unknown chunk sizes, unmapped outputs, progress
    with pytest.raises(ValueError, match="inconsistent sizes"):
        ad.vmap(g, in_axes=(1, 0, None))(ad_, X[:9], cd)
    unknown = da.from_array(X, chunks=(16, 24))[da.from_array(X[:, 0] > 0, chunks=16)]
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        ad.vmap(ad.grad(loss), in_axes=(None, 0))(W, unknown)
    with pytest.raises(NotImplementedError, match="out_axes=None"):
        ad.vmap(lambda r, w: (anp.sum(r), w * 2), in_axes=(0, None), out_axes=(0, None))(
            da.from_array(X), W
        )
    with pytest.raises(ValueError, match="progress="):
        ad.vmap(anp.sum, progress=True)(da.from_array(X))


# ---- faults ----------------------------------------------------------------------------------


def raises_in_task(x):
    if in_worker():
        raise ValueError("bad chunk from a worker")
    return f(x)


def test_a_task_error_fails_the_call_with_its_traceback(client):
    with pytest.raises(ValueError, match="bad chunk from a worker") as info:
        ad.jacrev(raises_in_task, chunk_size=4, executor=client)(X[0])
    assert any(entry.name == "raises_in_task" for entry in info.traceback)
    with pytest.raises(ValueError, match="bad chunk from a worker"):
        ad.vmap(raises_in_task, executor=client)(X)
    assert client.submit(sum, [1, 2]).result() == 3  # the client is still fine


def test_a_worker_killed_mid_jacobian_still_gives_the_exact_result(client, tmp_path):
    marker = str(tmp_path / "killed")

    def dies_once(x):
        if in_worker() and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)  # the worker process dies, in the middle of a task
        return f(x)

    x = X[2]
    before = set(client.scheduler_info()["workers"])
    got = ad.jacrev(dies_once, chunk_size=3, executor=client)(x)
    assert os.path.exists(marker)
    assert np.array_equal(got, ad.jacrev(f, chunk_size=3)(x))
    client.wait_for_workers(2, timeout=60)
    assert set(client.scheduler_info()["workers"]) != before  # (the nanny started a new one)


def _our_tasks(client) -> list:
    return client.run_on_scheduler(
        lambda dask_scheduler: [k for k in dask_scheduler.tasks if "autodiff" in str(k)]
    )


def _wait_no_tasks(client, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while _our_tasks(client) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _our_tasks(client) == []


def slow(x):
    time.sleep(0.4)
    return anp.sin(x)


def test_keyboard_interrupt_cancels_the_tasks(client):
    def interrupt(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ad.vmap(slow, executor=client, chunk_size=5, progress=interrupt)(X)
    _wait_no_tasks(client)  # cancelled: nothing left on the scheduler
    # ... from another thread, while the call runs: soon after it starts (its chunks sleep
    # when `slow` is traced, which a worker may do once and reuse: the call lasts a first
    # chunk's trace, not one sleep per chunk)
    # (Python's own SIGINT handler for the while, whatever an earlier test's libraries set:
    # `interrupt_main` raises nothing under another)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.1, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            ad.jacfwd(slow, executor=client, chunk_size=2)(X[0])
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    _wait_no_tasks(client)
    # the client is still usable
    assert np.array_equal(ad.vmap(anp.sin, executor=client)(X), np.sin(X))


def test_dask_progress_bar(client, capsys):
    got = ad.jacrev(f, chunk_size=6, executor=client, progress=True)(X[3])
    assert np.array_equal(got, ad.jacrev(f, chunk_size=6)(X[3]))
    assert "100% Completed" in capsys.readouterr().out
    seen = []
    ad.vmap(anp.sin, executor=client, chunk_size=15, progress=lambda d, t: seen.append((d, t)))(X)
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_torch_face_on_dask(client):
    x, y = ad.tensor(X[4]), ad.tensor(X[5])
    g = lambda x, y: (anp.tanh(A @ x) * y.sum(), (x * y).sin())
    got = F.jacobian(g, (x, y), executor=client, chunk_size=8)
    local = ad.jacrev(lambda a, b: g(a, b), argnums=(0, 1), chunk_size=8)(X[4], X[5])
    assert all(isinstance(b, ad.Tensor) for row in got for b in row)
    assert all(np.array_equal(b.numpy(), c) for r, rc in zip(got, local) for b, c in zip(r, rc))
    want = F.jacobian(g, (x, y), vectorize=True)
    assert all(np.allclose(b.numpy(), c.numpy()) for r, rc in zip(got, want) for b, c in zip(r, rc))
    h = lambda x: (anp.sin(A @ x) ** 3).sum()
    got = F.hessian(h, x, executor=client)
    assert isinstance(got, ad.Tensor) and np.allclose(got.numpy(), F.hessian(h, x).numpy())


# ---- concurrent.futures executors ----------------------------------------------------------


def test_thread_pool_equals_local():
    x = X[6]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        assert _equal(ad.jacrev(f, chunk_size=5, executor=pool)(x), ad.jacrev(f, chunk_size=5)(x))
        assert _equal(ad.jacfwd(f, executor=pool)(x), ad.jacfwd(f)(x))
        got = ad.vmap(ad.grad(loss), in_axes=(None, 0), executor=pool, chunk_size=7)(W, X)
        assert _equal(got, ad.vmap(ad.grad(loss), in_axes=(None, 0), chunk_size=7)(W, X))
        with pytest.raises(ValueError, match="from a thread"):
            ad.vmap(_raise_value_error, executor=pool)(X)


def _raise_value_error(x):
    raise ValueError("from a thread")


def test_process_pool_equals_local():
    pytest.importorskip("cloudpickle")  # (closures travel by cloudpickle)
    x = X[7]
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=spawn) as pool:
        h = lambda x: anp.sum(anp.sin(A @ x) ** 3)
        assert _equal(ad.hessian(h, chunk_size=6, executor=pool)(x), ad.hessian(h, chunk_size=6)(x))
        got = ad.vmap(ad.grad(loss), in_axes=(None, 0), executor=pool)(W, X)
        assert _equal(got, ad.vmap(ad.grad(loss), in_axes=(None, 0))(W, X))
        with pytest.raises(ZeroDivisionError):
            ad.vmap(lambda r: 1 / 0, executor=pool)(X)


# ---- what cannot travel, and the errors --------------------------------------------------------


def test_tracers_and_graphs_do_not_travel():
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        scaled = lambda w: anp.sum(ad.vmap(lambda r: anp.sum(r * w), executor=pool)(X))
        with pytest.raises(TracerConversionError, match="outermost transform"):
            ad.grad(scaled)(W)
        needs_grad = ad.tensor(W, requires_grad=True)
        with pytest.raises(RuntimeError, match="requires grad"):
            ad.vmap(lambda r: r * needs_grad, executor=pool)(X)
        # progress alone runs here, inside transforms too
        local = lambda w: anp.sum(
            ad.vmap(lambda r: anp.sum(r * w), chunk_size=7, progress=lambda d, t: None)(X)
        )
        assert np.allclose(ad.grad(local)(W), X.sum(0))


def test_executor_errors(monkeypatch):
    with pytest.raises(TypeError, match="concurrent.futures.Executor"):
        ad.jacrev(f, executor=object())(X[0])
    with pytest.raises(ValueError, match='"dask"'):
        ad.vmap(f, executor="ray")(X)
    with pytest.raises(TypeError, match="progress must be"):
        ad.vmap(f, progress="yes")(X)
    with pytest.raises(ValueError, match="chunk_size must be a positive int"):
        ad.jacrev(f, chunk_size=0, progress=True)(X[0])
    # Without Dask: a clear error naming the extra
    for name in ("dask", "dask.distributed", "distributed"):
        monkeypatch.setitem(sys.modules, name, None)
    fake = type("Client", (), {"__module__": "distributed.client"})()
    for executor in (fake, "dask"):
        with pytest.raises(ImportError, match=r'pip install "autodiff\[distributed\]"'):
            ad.jacrev(f, executor=executor)(X[0])


def test_local_progress(capsys):
    got = ad.jacrev(f, progress=True)(X[8])  # (20 chunks without chunk_size)
    assert np.array_equal(got, ad.jacrev(f, chunk_size=2)(X[8]))
    err = capsys.readouterr().err
    assert "jacrev rows" in err and "12/12" in err


def test_import_autodiff_does_not_import_dask():
    code = (
        "import sys, autodiff, autodiff.distributed\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('dask', 'distributed', 'cloudpickle', 'tqdm')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=os.path.dirname(__file__) + "/..")
