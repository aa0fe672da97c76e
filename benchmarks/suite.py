"""Every workload of the suite, by name, in table order."""

from __future__ import annotations

from benchmarks.tensor_workloads import TENSOR_WORKLOADS
from benchmarks.transform_workloads import TRANSFORM_WORKLOADS
from benchmarks.workloads import CHAIN, ELEMENTWISE, MLP, ODE, ODE_LOOP, Workload

WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (CHAIN, ELEMENTWISE, MLP, ODE, ODE_LOOP, *TRANSFORM_WORKLOADS, *TENSOR_WORKLOADS)
}
