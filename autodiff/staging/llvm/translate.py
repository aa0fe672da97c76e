"""Generated segment source (codegen.py's restricted Python) translated into LLVM IR text.

`translate(source, name, params, outputs, fastmath)` reads one function written by the Numba
backend's code generator and returns a `Translation`: the IR text of `void @name(ptr %args)`
and how its arguments are laid out. The language it accepts is what codegen.py and
statements.py write: straight-line scalar code, `for` loops over constant ranges, `while
True` with `break`, `if`/`elif`/`else`, array element reads and writes at integer
positions, `np.empty`, casts such as `np.float32(x)`, `math.*` and NumPy ufunc calls on
scalars, `.T`, `np.dot` (as loops), `np.ascontiguousarray(x)` (and `.reshape`, `.ravel()[0]`),
row stores `y[k] = a`, and a tuple return. Anything else raises `Unsupported`, and the
caller compiles the segment with Numba instead: a fallback, never a different answer.

Types are inferred in one forward pass, as Numba types the same code: a local has the type
of its first assignment; Python ints are int64, floats float64; arithmetic promotes as
Numba's scalars do (any integers of one signedness compute in 64 bits, int op float32 is
float32 only for integers of at most 16 bits, uint64 op int64 is float64); `/` of
integers is float64; `//` and `%` floor; division by zero follows NumPy (error_model
"numpy": inf/nan for floats, 0 for integers).

Arrays have static shapes and strides (in elements). Every array a statement makes (np.empty,
a copy, a product) has storage of its own for the whole call, allocated on entry: a site
inside a loop reuses its storage on each iteration, which is safe because the generated code
carries arrays across iterations only through names assigned more than once (loop carries,
branch results), and such a name gets storage of its own into which each assignment
copies. Storage is on the stack when small (64 KiB at most in all), else in one block
malloc'ed per call (arrays at constant offsets in it) and freed on return.

Calling convention: `args` is a Python tuple (runtime.py builds it), read through the
object layout of CPython and NumPy (`Layout`, checked at run time): one item per parameter,
an ndarray (C-contiguous, of the dtype declared) or a NumPy scalar of the parameter's dtype;
then one item per output, the ndarray the caller allocated for an array output; then, for
the scalar outputs, one 1-d array per kind (float64, int64, uint64) they are written into.
"""

from __future__ import annotations

import ast

import numpy as np

from autodiff.staging.llvm.scalars import Expressions
from autodiff.staging.llvm.values import (
    I64,
    KINDS,
    Array,
    Function,
    Layout,
    Param,
    Scalar,
    Translation,
    Unsupported,
    assigned_names,
    constant_int,
    constant_shape,
    dtype_of,
    ir_type,
    mem_type,
    np_attr,
)


class Translator(Expressions):
    """Translates one function's statements, in order (a loop over statements; only a
    single expression's tree is walked recursively)."""

    def __init__(self, params: list, outputs: list, fastmath: bool, layout: Layout):
        super().__init__(Function(fastmath), layout.blas, layout.vector_bits)
        self.layout = layout
        self.params = params
        self.out_avals = outputs
        self.env: dict = {}
        self.slots: dict = {}  # scalar local -> its alloca
        self.storage: dict = {}  # array local assigned more than once -> its own storage
        self.exits: list = []  # the exit labels of the enclosing while loops
        self.assigned: dict = {}
        self.bound: dict = {}  # array local (top-level np.empty) -> the output slot it is
        self.statements = 0

    # ---- the function ----
    def function(self, tree: ast.FunctionDef, name: str) -> Translation:
        self.assigned = assigned_names(tree)
        args = tree.args.args
        if len(args) != len(self.params) or tree.args.vararg or tree.args.kwonlyargs:
            raise Unsupported("parameters")
        for k, (arg, param) in enumerate(zip(args, self.params)):
            self._bind_param(arg.arg, param, k)
        body = tree.body
        if not body or not isinstance(body[-1], ast.Return):
            raise Unsupported("no return at the end")
        outputs = self._plan_outputs(body)
        self._block(body[:-1])
        self._return(body[-1], outputs)
        return self._finish(name, outputs)

    def _bind_param(self, name: str, param: Param, k: int) -> None:
        obj = self.item(k)
        if param.shape is not None:
            self.env[name] = Array(self.data(obj), param.dtype, param.shape)
        else:
            self.env[name] = self.scalar_object(obj, param.dtype)
        if self.assigned.get(name):
            raise Unsupported(f"parameter {name} assigned")

    def item(self, k: int) -> str:
        """The object in item `k` of the argument tuple."""
        f = self.f
        at = self.layout.tuple_items + 8 * k
        slot = f.value(f"getelementptr inbounds i8, ptr %args, i64 {at}", "p")
        return f.value(f"load ptr, ptr {slot}, align 8", "o")

    def data(self, obj: str) -> str:
        """The data pointer of the ndarray `obj`."""
        f = self.f
        slot = f.value(f"getelementptr inbounds i8, ptr {obj}, i64 {self.layout.array_data}", "p")
        return f.value(f"load ptr, ptr {slot}, align 8", "a")

    def scalar_object(self, obj: str, dtype) -> Scalar:
        """The value of a NumPy scalar of `dtype` (the caller makes it one)."""
        f = self.f
        slot = f.value(f"getelementptr inbounds i8, ptr {obj}, i64 {self.layout.scalar_value}")
        value = f.value(f"load {mem_type(dtype)}, ptr {slot}")
        if np.dtype(dtype).kind == "b":
            value = f.value(f"icmp ne i8 {value}, 0")
        return Scalar(value, dtype)

    def _plan_outputs(self, body: list) -> list:
        """The outputs' kinds (see Translation), and the top-level `np.empty` arrays that are
        written straight into an output."""
        ret = body[-1].value
        if not isinstance(ret, ast.Tuple) or len(ret.elts) != len(self.out_avals):
            raise Unsupported("return")
        top = {}
        for stmt in body[:-1]:
            if (
                isinstance(stmt, ast.Assign)
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Call)
                and np_attr(stmt.value.func) == "empty"
            ):
                top[stmt.targets[0].id] = stmt
        plan: list = []
        taken: set = set()
        names = list(self.env)
        for k, (elt, (_, shape)) in enumerate(zip(ret.elts, self.out_avals)):
            slot = len(self.params) + k
            if not shape:
                plan.append(None)
            elif isinstance(elt, ast.Name) and elt.id in names[: len(self.params)]:
                plan.append(("param", names.index(elt.id)))
            elif isinstance(elt, ast.Name) and elt.id in top and elt.id not in taken:
                if self.assigned.get(elt.id) == 1:
                    self.bound[elt.id] = slot
                    taken.add(elt.id)
                plan.append(("array", None))
            else:
                plan.append(("array", None))
        return plan

    def _return(self, stmt: ast.Return, plan: list) -> None:
        scalars = []
        assert isinstance(stmt.value, ast.Tuple)  # (_plan_outputs checked it)
        for k, elt in enumerate(stmt.value.elts):
            dtype, shape = self.out_avals[k]
            value = self.expr(elt)
            if plan[k] is None:
                if isinstance(value, Array):
                    raise Unsupported("an array for a scalar output")
                kind = {"f": "f", "u": "u"}.get(value.dtype.kind, "i")
                plan[k] = ("scalar", kind)
                scalars.append((kind, value))
                continue
            if plan[k][0] == "param":
                continue
            if not isinstance(value, Array) or value.shape != tuple(shape):
                raise Unsupported("an output's shape")
            if value.dtype != np.dtype(dtype):
                raise Unsupported("an output's dtype")
            if isinstance(elt, ast.Name) and self.bound.get(elt.id) == len(self.params) + k:
                continue
            ptr = self.data(self.item(len(self.params) + k))
            self.copy(Array(ptr, dtype, shape), value)
        self._scalar_outputs(scalars, len(self.params) + len(plan))

    def _scalar_outputs(self, scalars: list, position: int) -> None:
        """Write the scalar outputs: one array per kind ("f": float64, "i": int64, "u":
        uint64) from tuple item `position` on, in the order of KINDS, each holding that
        kind's outputs in order."""
        for kind in KINDS:
            values = [v for k, v in scalars if k == kind]
            if not values:
                continue
            words = self.data(self.item(position))
            position += 1
            dtype = np.dtype({"f": np.float64, "i": np.int64, "u": np.uint64}[kind])
            buffer = Array(words, dtype, (len(values),))
            for j, value in enumerate(values):
                self.store_element(buffer, [self.const(j, I64)], value)

    def _finish(self, name: str, plan: list) -> Translation:
        f = self.f
        f.branch("ret void")
        arena = ", ptr noalias nocapture %arena" if f.arena else ""
        head = f"define void @{name}(ptr noalias nocapture %args{arena}) nounwind {{"
        lines = [head, "entry:", *f.entry_lines(), *f.lines, "}"]
        ir = "\n".join(lines) + "\n"
        translation = Translation(ir, name, self.params, plan, self.statements, f.declarations)
        translation.out_avals = [(np.dtype(d), tuple(s)) for d, s in self.out_avals]
        translation.arena = f.arena
        translation.hinted_loops = f.hinted_loops
        return translation

    # ---- statements ----
    def _block(self, statements: list) -> None:
        for stmt in statements:
            self.statements += 1
            kind = type(stmt)
            if kind is ast.Assign:
                self._assign(stmt)
            elif kind is ast.For:
                self._for(stmt)
            elif kind is ast.While:
                self._while(stmt)
            elif kind is ast.If:
                self._if(stmt)
            elif kind is ast.Break and self.exits:
                self.f.branch(f"br label %{self.exits[-1]}")
            else:
                raise Unsupported(f"statement {kind.__name__}")

    def _assign(self, stmt: ast.Assign) -> None:
        if len(stmt.targets) != 1:
            raise Unsupported("chained assignment")
        target = stmt.targets[0]
        if isinstance(target, ast.Subscript):
            self._store(target, stmt.value)
            return
        if not isinstance(target, ast.Name):
            raise Unsupported("assignment target")
        name = target.id
        if name in self.bound:
            assert isinstance(stmt.value, ast.Call)  # (a top-level np.empty: _plan_outputs)
            shape = constant_shape(stmt.value.args[0])
            dtype = dtype_of(stmt.value.args[1])
            self.env[name] = Array(self.data(self.item(self.bound[name])), dtype, shape)
            return
        value = self.expr(stmt.value)
        if isinstance(value, Array):
            self._assign_array(name, value)
        else:
            self._assign_scalar(name, value)

    def _assign_scalar(self, name: str, value: Scalar) -> None:
        f = self.f
        slot = self.slots.get(name)
        if slot is None:
            if name in self.env:
                raise Unsupported(f"{name} changes kind")
            slot = self.slots[name] = f.new("v")
            f.entry.append(f"  {slot} = alloca {ir_type(value.dtype)}")
            self.env[name] = value.dtype
        if self.env[name] != value.dtype:
            raise Unsupported(f"{name} changes type")
        f.emit(f"store {ir_type(value.dtype)} {value.ref}, ptr {slot}")

    def _assign_array(self, name: str, value: Array) -> None:
        if self.assigned.get(name, 0) <= 1:
            self.env[name] = value
            return
        own = self.storage.get(name)
        if own is None:
            if name in self.env:
                raise Unsupported(f"{name} changes kind")
            ptr = self.f.storage(value.dtype, value.shape)
            own = self.storage[name] = Array(ptr, value.dtype, value.shape)
            self.env[name] = own
        if own.dtype != value.dtype or own.shape != value.shape:
            raise Unsupported(f"{name} changes type")
        self.copy(own, value)

    def lookup(self, name: str):
        value = self.env.get(name)
        if value is None:
            raise Unsupported(f"unknown name {name}")
        if isinstance(value, np.dtype):
            slot = self.slots[name]
            return Scalar(self.f.value(f"load {ir_type(value)}, ptr {slot}"), value)
        return value

    def _store(self, target: ast.Subscript, value_node) -> None:
        array = self.expr(target.value)
        if not isinstance(array, Array):
            raise Unsupported("store into a scalar")
        index = self.index_list(target.slice)
        value = self.expr(value_node)
        if len(index) == len(array.shape) and not any(isinstance(i, slice) for i in index):
            if isinstance(value, Array):
                raise Unsupported("an array into an element")
            self.store_element(array, index, value)
            return
        part = self.view_of(array, index)  # (a row y[k] = a, or a block)
        if isinstance(value, Array):
            self.copy(part, value)
        else:
            self.fill(part, value)

    def _for(self, stmt: ast.For) -> None:
        call = stmt.iter
        if (
            stmt.orelse
            or not isinstance(stmt.target, ast.Name)
            or not isinstance(call, ast.Call)
            or not isinstance(call.func, ast.Name)
            or call.func.id != "range"
        ):
            raise Unsupported("for loop")
        bounds = [constant_int(a) for a in call.args]
        if not 1 <= len(bounds) <= 3:
            raise Unsupported("range")
        start, stop, step = {1: (0, *bounds, 1), 2: (*bounds, 1), 3: tuple(bounds)}[len(bounds)]
        if step == 0:
            raise Unsupported("range")
        name = stmt.target.id
        if name in self.env and self.env[name] != I64:
            raise Unsupported("loop variable reused")
        outer, self.trip = self.trip, len(range(start, stop, step))
        try:
            self.loop(start, stop, step, lambda i: self._loop_body(name, i, stmt.body))
        finally:
            self.trip = outer

    def _loop_body(self, name: str, index: Scalar, body: list) -> None:
        self._assign_scalar(name, index)
        self._block(body)

    def _while(self, stmt: ast.While) -> None:
        if stmt.orelse or not (isinstance(stmt.test, ast.Constant) and stmt.test.value is True):
            raise Unsupported("while loop")
        f = self.f
        head, done = f.label("while"), f.label("wend")
        f.start(head)
        self.exits.append(done)
        self._block(stmt.body)
        self.exits.pop()
        f.branch(f"br label %{head}")
        f.start(done)

    def _if(self, stmt: ast.If) -> None:
        f = self.f
        test = self.truth(self.expr(stmt.test))
        then, other, done = f.label("then"), f.label("else"), f.label("endif")
        f.branch(f"br i1 {test.ref}, label %{then}, label %{other}")
        f.start(then)
        self._block(stmt.body)
        if not f.terminated:
            f.branch(f"br label %{done}")
        f.start(other)
        self._block(stmt.orelse)
        f.start(done)


def translate(
    source, name: str, params: list, outputs: list, layout: Layout, fastmath: bool = False
):
    """The `Translation` of the function `name` in `source` (text or a parsed module).

    Arguments:
        source: the module text codegen.py wrote (or its `ast`).
        name: the function to translate.
        params: a `Param` per parameter (inputs, then the caller's buffers).
        outputs: (dtype, shape) per returned value.
        layout: where CPython and NumPy keep what the code reads (`Layout`).
        fastmath: LLVM's fast-math flags on float operations (no reassociation).

    Raises:
        Unsupported: for anything outside the language described in the module docstring.
    """
    tree = ast.parse(source) if isinstance(source, str) else source
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return Translator(params, outputs, fastmath, layout).function(node, name)
    raise Unsupported(f"no function {name}")


__all__ = ["Param", "Translation", "Unsupported", "translate"]
