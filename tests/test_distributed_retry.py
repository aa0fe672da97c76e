"""A chunk whose task the cluster cancels under us runs again (distributed/chunks.py).

On a loaded machine a Dask cluster that loses a worker may hand back a chunk's future as
cancelled, its result a CancelledError; the chunk is then submitted again, a bounded number
of times. A backend that plays such a cluster checks it without Dask.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import CancelledError

import numpy as np
import pytest

from autodiff.distributed import chunks


class _Future:
    def __init__(self, result, cancelled: bool):
        self.result, self.status = result, "cancelled" if cancelled else "finished"


class _Completed:
    """Dask's as_completed as run_chunks uses it: iteration, and `add` while iterating."""

    def __init__(self, futures):
        self.queue = deque(futures)

    def __iter__(self):
        while self.queue:
            f = self.queue.popleft()
            yield f, f.result

    def add(self, future) -> None:
        self.queue.append(future)


class _CancellingCluster:
    """Runs each task at once; the first `cancels` submissions of chunk `victim` come back
    cancelled."""

    kind = "fake"

    def __init__(self, victim: int, cancels: int):
        self.victim, self.cancels, self.submitted = victim, cancels, []

    def start(self, task, where):
        return task

    def pack_chunk(self, chunk, where):
        return chunk

    def submit_all(self, runner, session, shipped, label):
        futures = []
        for c in shipped:
            self.submitted.append(label)
            if c[0] == self.victim and self.cancels > 0:
                self.cancels -= 1
                futures.append(_Future(CancelledError(), cancelled=True))
            else:
                futures.append(_Future(runner(session, c, False), cancelled=False))
        return futures

    def completed(self, futures):
        return _Completed(futures)

    def was_cancelled(self, future, result) -> bool:
        return future.status == "cancelled"

    def forget(self, future) -> None:
        pass

    def cancel(self, futures) -> None:
        pass

    def stop(self, session) -> None:
        pass


def _run(cluster):
    def task(i, x):
        return x * 2.0

    parts = [(i, np.arange(3.0) + 3 * i) for i in range(4)]
    return chunks.run_chunks(
        cluster, task, parts, [3] * 4, 12, 0, False, "test", None, "vmap(executor=)"
    )


def test_a_cancelled_chunk_runs_again():
    cluster = _CancellingCluster(victim=2, cancels=2)
    np.testing.assert_array_equal(_run(cluster), np.arange(12.0) * 2.0)
    assert cluster.submitted == ["test"] * 4 + ["test-retry1-2", "test-retry2-2"]


def test_a_chunk_cancelled_every_time_raises():
    cluster = _CancellingCluster(victim=1, cancels=chunks.RETRIES + 1)
    with pytest.raises(RuntimeError, match="cancelled chunk 1's task 4 times"):
        _run(cluster)
