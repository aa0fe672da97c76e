"""Scale-out on Dask: a Jacobian on 1 worker against 2, the per-task overhead, and the memory of
per-example gradients of a dataset larger than a worker's memory.

Run: python -m benchmarks.bench_distributed [--quick] [--repeat 5] [--dask-defaults]
     python -m benchmarks.bench_distributed --memory

Not part of `python -m benchmarks` (it starts Dask clusters and takes a minute or more).

- **Jacobian**: `jacrev` of one implicit-Euler step of the nonlinear diffusion equation
  u_t = (D(u) u_x)_x, D(u) = 0.5 + u^2, on 2,000 cells (Dirichlet boundaries, r = dt/dx^2 =
  0.5), the implicit equations solved by 16 nonlinear Jacobi sweeps (residual ~1e-9): a
  2,000 x 2,000 Jacobian whose rows cost about a millisecond each. Timed in this process
  (no executor, the same `chunk_size`), on a LocalCluster of 1 worker and on one of 2
  workers (processes, 1 thread each; both clusters up, the runs interleaved round-robin so
  that a busy spell of a shared machine falls on all columns alike); each cell's best of
  `--repeat` runs, the spread (max / min) and the CPU share of its best run (CPU time of
  the process or of the workers over wall time x workers: below 90%, other processes took
  the CPU, and the cell is marked `~`). The distributed results are compared with the local
  one bit for bit. The workers run with a malloc setting and without Dask's profiler (see
  WORKER_CONFIG; `--dask-defaults` keeps Dask's settings).
- **The machine's ceiling**: the same local chunk loop in one fresh process alone, then in two
  at once (no Dask): 2 x alone / together bounds what 2 workers can gain on these cores.
- **Per-task overhead**: `vmap(executor=client, chunk_size=1)` of a function that does
  nearly nothing, over 200 members on the 2-worker cluster: wall time per task.
- **Memory** (`--memory`): per-example gradients of a logistic loss over a Dask array of
  10^6 x 100 float64 (800 MB, in chunks of 20,000 rows, generated on the workers),
  `vmap(grad(loss), in_axes=(None, 0))(w, X).mean(axis=0).compute()` on 2 workers with a
  memory limit of 1 GiB each; the peak resident memory of each worker process (ru_maxrss)
  is reported, and the mean is checked against the closed-form gradient.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # (inherited by the workers, which are processes)

import argparse  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import autodiff as ad  # noqa: E402
import autodiff.numpy as anp  # noqa: E402

CELLS = 2000
SWEEPS = 16
R = 0.5  # dt / dx^2
CHUNK = 100  # Jacobian rows per task: 20 tasks of ~0.1 s (Dask advises tasks of 100 ms or more)
BUSY = 0.9  # below this CPU share, a run was slowed by other processes (marked "~")
_ZERO = np.zeros(1)


def diffusivity(u):
    return 0.5 + u**2


def implicit_euler_step(u0):
    """u1 with u1 - u0 = r (D(u1) u1_x)_x (cell-face diffusivities, zero at both ends),
    by nonlinear Jacobi sweeps started at u0."""
    u = u0
    for _ in range(SWEEPS):
        d = diffusivity(u)
        dpad = anp.concatenate([d[:1], d, d[-1:]])
        upad = anp.concatenate([_ZERO, u, _ZERO])
        dp = 0.5 * (dpad[1:-1] + dpad[2:])
        dm = 0.5 * (dpad[1:-1] + dpad[:-2])
        u = (u0 + R * (dp * upad[2:] + dm * upad[:-2])) / (1 + R * (dp + dm))
    return u


def initial_state(cells: int = CELLS) -> np.ndarray:
    return np.sin(np.linspace(0.0, np.pi, cells)) + 0.1


def nothing(x):
    return x + 1.0


def logistic_loss(w, x):
    return anp.log1p(anp.exp(-anp.dot(x, w))) + 0.1 * anp.sum(w**2)


# A worker process that only runs chunk tasks allocates and frees many medium-sized arrays
# (here 50 x 2,000 float64, 800 KB) and never a large one: glibc then gives memory back to
# the OS and faults fresh pages in, chunk after chunk (measured: tasks 3x slower than in a
# process whose heap has grown, 10x with Dask's MALLOC_TRIM_THRESHOLD_=65536).
# MALLOC_TOP_PAD_ keeps 32 MiB at the top of the heap. Dask's statistical profiler, which
# samples the running task's stack every 10 ms, is off too (a few percent). See the guide
# "Scaling out with Dask"; --dask-defaults keeps Dask's settings.
WORKER_CONFIG = {
    "distributed.nanny.pre-spawn-environ.MALLOC_TOP_PAD_": 32 * 2**20,
    "distributed.worker.profile.enabled": False,
}


def _cluster(workers: int, dask_defaults: bool = False, **kwargs):
    import dask
    from dask.distributed import Client, LocalCluster

    logging.getLogger("distributed").setLevel(logging.ERROR)  # (the scheduler runs here)
    with dask.config.set({} if dask_defaults else WORKER_CONFIG):
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
            **kwargs,
        )
    return cluster, Client(cluster, set_as_default=False)


def _time(f) -> tuple[float, object]:
    start = time.perf_counter()
    out = f()
    return time.perf_counter() - start, out


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms" if seconds < 10 else f"{seconds:.2f} s"


def _cpu(client) -> float:
    """CPU seconds used so far: this process's, or the sum over a cluster's workers."""
    if client is None:
        return time.process_time()
    return sum(client.run(time.process_time).values())


def jacobian_benchmark(repeat: int, cells: int, dask_defaults: bool, chunk: int = CHUNK) -> None:
    x = initial_state(cells)
    jac = ad.jacrev(implicit_euler_step, chunk_size=chunk)
    local = jac(x)  # (warm-up, and the reference)
    clusters = {n: _cluster(n, dask_defaults) for n in (1, 2)}
    try:
        names = {"local": (None, 1), "1 worker": (clusters[1][1], 1)}
        names["2 workers"] = (clusters[2][1], 2)
        calls = {
            name: ad.jacrev(implicit_euler_step, chunk_size=chunk, executor=client)
            for name, (client, _) in names.items()
        }
        exact = {}
        for name in ("1 worker", "2 workers"):  # warm-up: imports and caches on the workers
            exact[name] = np.array_equal(calls[name](x), local)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
        for _ in range(repeat):
            for name, call in calls.items():
                client, workers = names[name]
                cpu = _cpu(client)
                seconds, out = _time(lambda call=call: call(x))
                share = (_cpu(client) - cpu) / (seconds * workers)
                runs[name].append((seconds, share))
                if name != "local":
                    exact[name] &= np.array_equal(out, local)
        print(
            f"jacrev of an implicit-Euler step, {cells} cells: a {cells} x {cells} Jacobian, "
            f"chunk_size={chunk} ({-(-cells // chunk)} tasks), best of {repeat} (spread = "
            "max / min; CPU share of the best run: CPU time of the process or of the workers "
            f"over wall time x workers, '~' below {BUSY:.0%}: the machine was busy)"
        )
        print(
            f"{'':12}| {'best':>9} | {'median':>9} | {'spread':>6} | CPU share | ms/row | "
            "bitwise = local"
        )
        for name, results in runs.items():
            times = [t for t, _ in results]
            best, share = min(results)
            flag = "~" if share < BUSY else " "
            same = "-" if name == "local" else str(exact[name])
            print(
                f"{name:12}| {_fmt(best):>9} | {_fmt(float(np.median(times))):>9} | "
                f"{max(times) / best:5.2f}x | {share:8.0%}{flag} | {best / cells * 1e3:6.2f} | "
                f"{same}"
            )
        one = [t for t, _ in runs["1 worker"]]
        two = [t for t, _ in runs["2 workers"]]
        ratios = sorted(a / b for a, b in zip(one, two))
        print(
            f"speed-up, 2 workers over 1: {min(one) / min(two):.2f}x (best over best); per "
            "round: " + ", ".join(f"{r:.2f}x" for r in ratios)
        )
        overhead(clusters[2][1])
    finally:
        for cluster, client in clusters.values():
            client.close()
            cluster.close()
    ceiling(cells, chunk)


def _chunk_loop(cells: int, chunk: int, rounds: int, start, done) -> None:
    """In a fresh process (the workers' malloc setting): the Jacobian's chunks, run locally
    `rounds` times once `start` is set; the best wall time goes to `done`."""
    x = initial_state(cells)
    jac = ad.jacrev(implicit_euler_step, chunk_size=chunk)
    jac(x)
    start.wait()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        jac(x)
        best = min(best, time.perf_counter() - t0)
    done.put(best)


def ceiling(cells: int, chunk: int, rounds: int = 5) -> None:
    """What two processes get from this machine's two cores on this work, without Dask: the
    same local chunk loop in one process alone, then in two at once (each its own loop). The
    ratio 2 x alone / together bounds any 2-worker speed-up (memory bandwidth and caches
    are shared)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    env = {
        "MALLOC_TOP_PAD_": str(WORKER_CONFIG["distributed.nanny.pre-spawn-environ.MALLOC_TOP_PAD_"])
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # (inherited by the spawned processes, as by Dask's workers)
    try:
        walls = {}
        for n in (1, 2):
            start, done = ctx.Event(), ctx.Queue()
            procs = [
                ctx.Process(target=_chunk_loop, args=(cells, chunk, rounds, start, done))
                for _ in range(n)
            ]
            for p in procs:
                p.start()
            time.sleep(0.5)
            start.set()
            walls[n] = max(done.get() for _ in procs)
            for p in procs:
                p.join()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    print(
        f"the machine's ceiling (no Dask): the local chunk loop alone {_fmt(walls[1])}, in two "
        f"processes at once {_fmt(walls[2])} each: 2 workers can be at most "
        f"{2 * walls[1] / walls[2]:.2f}x 1 worker here"
    )


def overhead(client, tasks: int = 200) -> None:
    call = ad.vmap(nothing, executor=client, chunk_size=1)
    xs = np.zeros((tasks, 4))
    call(xs)
    best = min(_time(lambda: call(xs))[0] for _ in range(3))
    print(
        f"per-task overhead (vmap of x + 1 over {tasks} members, chunk_size=1, 2 workers): "
        f"{best / tasks * 1e3:.2f} ms per task ({_fmt(best)} for {tasks} tasks)"
    )


def memory_benchmark(rows: int, features: int, chunk_rows: int) -> None:
    import resource

    import dask.array as da

    cluster, client = _cluster(2, memory_limit="1GiB")
    try:

        def peak_mib() -> float:
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        base = client.run(peak_mib)
        X = da.random.RandomState(0).random_sample((rows, features), chunks=(chunk_rows, features))
        X = X - 0.5
        w = np.linspace(-1.0, 1.0, features)
        grads = ad.vmap(ad.grad(logistic_loss), in_axes=(None, 0))(w, X)
        seconds, mean = _time(lambda: client.compute(grads.mean(axis=0)).result())
        # The closed form: d/dw log(1 + exp(-x.w)) + 0.1 |w|^2 = -x / (1 + exp(x.w)) + 0.2 w
        z = X @ w
        exact = (-(X / (1 + da.exp(z))[:, None])).mean(axis=0) + 0.2 * w
        exact = client.compute(exact).result()
        peaks = client.run(peak_mib)
        print(
            f"per-example gradients of a {rows:,} x {features} Dask array "
            f"({rows * features * 8 / 2**20:,.0f} MiB, chunks of {chunk_rows:,} rows; the "
            f"gradients {rows * features * 8 / 2**20:,.0f} MiB too), mean over the cluster: "
            f"{_fmt(seconds)}; max |mean - closed form| = {np.abs(mean - exact).max():.1e}"
        )
        for address in sorted(peaks):
            print(
                f"  worker {address}: peak resident memory {peaks[address]:,.0f} MiB "
                f"(after start-up: {base[address]:,.0f} MiB; memory_limit 1 GiB)"
            )
        print(f"  this process (the client): peak {peak_mib():,.0f} MiB")
    finally:
        client.close()
        cluster.close()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 500-cell Jacobian, 2 rounds")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds (default 5)")
    parser.add_argument("--chunk", type=int, default=CHUNK, help=f"rows per task ({CHUNK})")
    parser.add_argument(
        "--memory", action="store_true", help="the 10^6 x 100 memory run (instead of the rest)"
    )
    parser.add_argument(
        "--dask-defaults",
        action="store_true",
        help="keep Dask's worker defaults (MALLOC_TRIM_THRESHOLD_, profiler)",
    )
    args = parser.parse_args(argv)
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # (workers need not import it)
    if args.memory:
        memory_benchmark(10**6, 100, 20_000)
    elif args.quick:
        jacobian_benchmark(2, 500, args.dask_defaults)
    else:
        jacobian_benchmark(args.repeat, CELLS, args.dask_defaults, args.chunk)


if __name__ == "__main__":
    main()
