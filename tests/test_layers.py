"""The package's layers: imports point down the layers, form no cycle, and none hides in a function.

Read from the source (AST), nothing is imported. The graph has an edge from a module to
each autodiff module it imports at module level: `import a.b` and `from a.b import c` name
`a.b` (or the submodule `a.b.c`, when `c` is one); parent packages' `__init__` add no
implicit edge. Imports under `if TYPE_CHECKING:` never run and are left out. Inside a
function only the lazy imports listed in `LAZY_IMPORTS` are allowed: an import of an
autodiff module in a function body is how a cycle hides, so none is.

The layers, lowest first (a package's `__init__` docstring says what lives in it and what
it may import):

    core          the tracer layer                          imports nothing of autodiff
    kernels       Numba kernels, pure ndarray functions     core
    ops           primitives and their rules                kernels, core
    namespaces    numpy, scipy, tree_util                   ops, ...
    torch         the torch face: dtypes, types, functions  namespaces, ...
                  (autodiff/torch/, but for the rows below)
    forward_ad    ForwardTrace, jvp, dual levels            ops, ...
    reverse       ReverseTrace, engine, grad, vjp           forward_ad (.trace), ops, ...
    distributed   chunks as tasks (executor=), Dask arrays  core
    vmap          BatchTrace, vmap                          ops, distributed, ...
    jacobians     jacrev, jacfwd, hessian, hvp              reverse, forward_ad, vmap, ...
    taylor        JetTrace, jet, derivatives                ops, ...
    sparse        coloring, compressed-matrix recovery      kernels
    custom        custom_jvp, custom_vjp, checkpoint        reverse, forward_ad, vmap, ...
    staging       jit, the Graph IR, passes, executors      reverse, forward_ad, vmap, ...
    sparse.detect sparsity detection on staged graphs      staging
    control       cond, switch, loops, scan                 staging, namespaces, ...
    implicit      custom_root, custom_linear_solve          control, ...
    lax           JAX's lax API, composites                 implicit, namespaces, ...
    scipy.optimize
                  SciPy's solvers, differentiated implicitly implicit
    scipy.integrate
                  odeint and its adjoint                    control, custom
    sparse.jacobians
                  compressed Jacobians and Hessians         sparse, staging, namespaces
    testing       check_grads                               reverse, forward_ad, ...
    autograd      the torch.autograd face                   jacobians, torch, ...
    torch.nn      torch.nn, torch.optim, torch.utils, _C    autograd, ...
                  (autodiff/torch/nn, optim, utils, _C.py)
    func          torch.func's transforms                   torch.nn, jacobians, ...
    autodiff      the public API, Tensor's method table     everything
                  (and autodiff/torch/_tensor_methods.py)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "autodiff"

# Top-level packages a function body may import, and why each is loaded lazily.
LAZY_IMPORTS: dict[str, str | tuple[str, ...]] = {
    # A required dependency, but loading it costs about a second: the kernels load it only
    # once they pay for it (kernels/_numba.py's tiering), never at `import autodiff`.
    "numba": "autodiff/kernels/",
    # Numba's own dependency: the versions in jit's disk-cache key (with Numba), and the LLVM
    # backend (staging/llvm/engine.py), loaded at its first compile.
    "llvmlite": "autodiff/staging/",
    # importlib.metadata takes ~15 ms to import: the jit cache reads a version with it only
    # when the package has no __version__.
    "importlib": "autodiff/staging/numba/",
    # distributed/ (DESIGN section 9): Dask arrays for blockwise vmap, an optional extra.
    "dask": "autodiff/distributed/",
    # ... and what comes with the extra: Dask's scheduler, cloudpickle (how a task's function
    # travels), tqdm (progress bars), IPython (a notebook's progress widget).
    "distributed": "autodiff/distributed/",
    "cloudpickle": "autodiff/distributed/",
    "tqdm": "autodiff/distributed/",
    "IPython": "autodiff/distributed/",
    # SciPy: sparse/ builds and returns scipy.sparse arrays, and the special functions' kernels
    # call SciPy's ufuncs (kernels/special.py), loaded on first use so that `import autodiff`
    # never pays for it.
    "scipy": ("autodiff/sparse/", "autodiff/kernels/"),
    # Standard-library modules `import autodiff` need not load (the startup test,
    # tests/test_startup.py, holds it to that): hashlib loads OpenSSL, for the fused kernels'
    # cache names; traceback, for anomaly mode's stacks; concurrent.futures (and logging with
    # it), for executor=.
    "hashlib": "autodiff/kernels/",
    "traceback": "autodiff/autograd/",
    "concurrent": "autodiff/distributed/",
}

# Each layer: the modules in it (a name covers its submodules) and the layers it builds on
# directly; it may import those and, transitively, what they build on.
LAYERS = {
    "core": (["autodiff.core"], []),
    "kernels": (["autodiff.kernels"], ["core"]),
    "ops": (["autodiff.ops"], ["kernels"]),
    "namespaces": (
        ["autodiff.numpy", "autodiff.scipy", "autodiff.tree_util"],
        ["ops"],
    ),
    # The torch face's functions, types and dtypes; its upper parts are the rows torch.nn and
    # autodiff below (a module is in the layer of the longest name that covers it).
    "torch": (["autodiff.torch"], ["namespaces"]),
    "forward_ad": (["autodiff.forward_ad"], ["ops"]),
    # The engine gives the residuals of nodes recorded under a dual level their tangents.
    "reverse": (["autodiff.reverse"], ["forward_ad"]),
    # Chunks of batched transforms as tasks of an executor; Dask arrays (the transforms pass
    # in what to run).
    "distributed": (["autodiff.distributed"], ["core"]),
    "vmap": (["autodiff.vmap"], ["ops", "distributed"]),
    "jacobians": (["autodiff.jacobians"], ["reverse", "vmap"]),
    # Taylor mode: JetTrace and its jvp fallback, over the ops' taylor rules.
    "taylor": (["autodiff.taylor"], ["ops"]),
    # Coloring of sparsity patterns and recovery plans: Numba loops, SciPy arrays.
    "sparse": (["autodiff.sparse"], ["kernels"]),
    # Sparsity detection: index sets propagated through staged graphs.
    "sparse.detect": (["autodiff.sparse.detect"], ["staging"]),
    # The staged program and the trace that records it: the core's concepts, no transform.
    "graphs": (["autodiff.staging.ir", "autodiff.staging.trace"], ["core"]),
    # (custom rules' abstract_eval stages the user's function)
    "custom": (["autodiff.custom"], ["reverse", "vmap", "graphs"]),
    "staging": (["autodiff.staging"], ["graphs", "reverse", "vmap"]),
    "control": (["autodiff.control"], ["staging", "namespaces"]),
    # Implicit differentiation: solvers' derivatives from the equations they solve; SciPy's
    # solvers made differentiable with it (autodiff.scipy.optimize, loaded on first use).
    "implicit": (["autodiff.implicit"], ["control"]),
    # JAX's lax API for ported code: composites of the namespaces' functions, the control
    # flow re-exported (loaded on first use: `autodiff.lax`).
    "lax": (["autodiff.lax"], ["implicit"]),
    "scipy.optimize": (["autodiff.scipy.optimize"], ["implicit"]),
    # odeint: a custom_vjp (the adjoint method) around structured loops; autodiff.scipy loads
    # it on first use.
    "scipy.integrate": (["autodiff.scipy.integrate", "autodiff.scipy._ode"], ["control", "custom"]),
    # Compressed Jacobians and Hessians: colorings evaluated as vmaps of jvp/vjp under jit.
    "sparse.jacobians": (
        ["autodiff.sparse.jacobians"],
        ["sparse", "sparse.detect", "staging", "namespaces"],
    ),
    "testing": (["autodiff.testing"], ["reverse"]),
    "autograd": (["autodiff.autograd"], ["jacobians", "torch"]),
    # (loaded on first use: `autodiff.nn` is the root's module __getattr__, no import statement)
    "torch.nn": (
        [
            "autodiff.torch.nn",
            "autodiff.torch.optim",
            "autodiff.torch.utils",
            "autodiff.torch._C",
        ],
        ["autograd"],
    ),
    # torch.func: the core transforms with torch's conventions, over torch.nn's modules
    # (loaded on first use, as torch.nn)
    "func": (["autodiff.func"], ["torch.nn"]),
    # torch.compile: a module's forward staged by jit through functional_call (loaded on first
    # use, as torch.nn).
    "torch.compile": (
        [
            "autodiff.torch.compile",
            "autodiff.torch.compile_optim",
            "autodiff.torch.compile_step",
            "autodiff.torch.compiler",
        ],
        ["torch.nn", "staging"],
    ),
    "autodiff": (
        ["autodiff", "autodiff.torch._tensor_methods", "autodiff.__main__"],
        ["autograd", "custom", "control", "taylor", "implicit"],
    ),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(node: ast.Import | ast.ImportFrom, module: str, path: Path) -> list[tuple]:
    """(name, else_name) for each name an import statement imports: `import a.b` gives
    (a.b, a.b); `from a import b` gives (a.b, a), the module a.b if there is one, else a."""
    if isinstance(node, ast.Import):
        return [(alias.name, alias.name) for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: resolve against this module's package
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([base] if base else []))
    return [(f"{base}.{alias.name}", base) for alias in node.names]


def _imports(path: Path, module: str):
    """(line, statement, names, in_function) for each import statement of a module."""
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.orelse:
                    visit_stmt(stmt, in_function)
                continue
            visit_stmt(child, in_function)

    def visit_stmt(child: ast.AST, in_function: bool) -> None:
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            names = _imported(child, module, path)
            found.append((child.lineno, ast.unparse(child), names, in_function))
        visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(ast.parse(path.read_text(), str(path)), False)
    return found


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def _graph(modules: dict[str, Path]) -> dict[str, dict[str, str]]:
    """module -> {imported module: 'file:line statement'} over module-level imports."""
    graph: dict[str, dict[str, str]] = {m: {} for m in modules}
    for module, path in modules.items():
        for line, stmt, names, in_function in _imports(path, module):
            if in_function:
                continue
            for name, else_name in names:
                target = name if name in modules else else_name
                if target in modules and target != module:
                    graph[module].setdefault(target, f"{_where(path, line)}  {stmt}")
    return graph


def _cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """One cycle through each strongly connected component with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def connect(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(set(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    cycles = []
    for component in components:
        start = min(component)
        # Shortest path from start back to itself within the component (breadth first).
        parents: dict[str, str] = {}
        frontier = [start]
        while frontier and start not in parents:
            following = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w in component and w not in parents:
                        parents[w] = v
                        following.append(w)
            frontier = following
        cycle = [start]
        v = parents[start]
        while v != start:
            cycle.append(v)
            v = parents[v]
        cycle.append(start)
        cycles.append(cycle[::-1])
    return cycles


def _layer_of(module: str) -> str | None:
    """The layer whose longest name covers `module` (the root `autodiff` covers only itself)."""
    best, layer = "", None
    for name, (members, _) in LAYERS.items():
        for member in members:
            covers = module == member or (member != "autodiff" and module.startswith(member + "."))
            if covers and len(member) > len(best):
                best, layer = member, name
    return layer


def _below(layer: str) -> set[str]:
    """The layers `layer` may import: those it builds on and, transitively, theirs."""
    found: set[str] = set()
    pending = list(LAYERS[layer][1])
    while pending:
        name = pending.pop()
        if name not in found:
            found.add(name)
            pending.extend(LAYERS[name][1])
    return found


def test_imports_point_down_the_layers():
    modules = _modules()
    graph = _graph(modules)
    offending = [
        f"{module}: in no layer (add it to LAYERS)"
        for module in modules
        if _layer_of(module) is None
    ]
    for module, targets in sorted(graph.items()):
        layer = _layer_of(module)
        for target, where in sorted(targets.items()):
            target_layer = _layer_of(target)
            if layer is None or target_layer in (None, layer) or target_layer in _below(layer):
                continue
            offending.append(f"{where}  ({layer} imports {target_layer})")
    if offending:
        pytest.fail("imports against the layer order (see LAYERS):\n" + "\n".join(offending))


def test_no_module_level_import_cycle():
    graph = _graph(_modules())
    cycles = _cycles(graph)
    report = []
    for cycle in cycles:
        report.append("cycle: " + " -> ".join(cycle))
        report.extend(f"    {graph[a][b]}" for a, b in zip(cycle, cycle[1:]))
    if cycles:
        pytest.fail("module-level import cycles:\n" + "\n".join(report))


def test_no_import_inside_functions():
    offending = []
    for module, path in _modules().items():
        relative = str(path.relative_to(ROOT))
        for line, stmt, names, in_function in _imports(path, module):
            if not in_function:
                continue
            top = names[0][1].split(".")[0]
            if top in LAZY_IMPORTS and relative.startswith(LAZY_IMPORTS[top]):
                continue
            offending.append(f"{_where(path, line)}  {stmt}")
    if offending:
        pytest.fail(
            "imports inside a function body (move them to the top of the module; a cycle means "
            "a function is in the wrong layer; only LAZY_IMPORTS may load lazily):\n"
            + "\n".join(offending)
        )


def test_the_checks_see_cycles_and_hidden_imports(tmp_path):
    """The checks themselves: a two-module cycle and an import in a function are found."""
    a = {"p.a": {"p.b": "a.py:1"}, "p.b": {"p.a": "b.py:1"}, "p.c": {"p.a": "c.py:1"}}
    assert _cycles(a) == [["p.a", "p.b", "p.a"]]
    source = tmp_path / "m.py"
    source.write_text(
        "from autodiff.core import trace\n"
        "if TYPE_CHECKING:\n    from autodiff.reverse import graph\n"
        "def f():\n    from autodiff import vmap\n"
    )
    found = [(line, names, inner) for line, _, names, inner in _imports(source, "m")]
    assert found == [
        (1, [("autodiff.core.trace", "autodiff.core")], False),
        (5, [("autodiff.vmap", "autodiff")], True),
    ]


def _stub_graph(modules: dict[str, Path]) -> dict[str, dict[str, str]]:
    """The import graph a type checker reads: a module with a stub (.pyi) has the stub's
    imports in place of its source's."""
    stubs = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.pyi"))}
    graph = _graph({**modules, **stubs})
    return {m: targets for m, targets in graph.items() if m in modules or m in stubs}


def test_stubs_follow_the_layers():
    """The generated stubs (tools/make_stubs.py) import down the layers too, so that no tool
    reading them sees an import circle: core/tensor.pyi imports nothing above core."""
    graph = _stub_graph(_modules())
    offending = []
    for path in sorted(PACKAGE.rglob("*.pyi")):
        module = _module_name(path)
        layer = _layer_of(module)
        for target, where in sorted(graph[module].items()):
            target_layer = _layer_of(target)
            if target_layer not in (None, layer) and target_layer not in _below(layer):
                offending.append(f"{where}  ({layer} imports {target_layer})")
    offending += ["cycle: " + " -> ".join(cycle) for cycle in _cycles(graph)]
    if offending:
        pytest.fail("stub imports against the layer order (see LAYERS):\n" + "\n".join(offending))
