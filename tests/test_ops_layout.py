"""The layout of `autodiff/ops/`: each primitive's rules sit within a screen of it, no file is long.

Read from the source (AST), nothing is imported. A primitive is a module-level name bound
to `Primitive(...)` or to a call of a function that creates one (`unary(...)`,
`_kernel_primitive(...)`, ...). Its rules are attached at module level

- as attributes, `x_p.vjp = f` or `x_p.fast.vjp = f` (also in a `for _p in (x_p, y_p):`
  loop, which attaches to each primitive it names),
- as arguments of the call that creates it (`_unary("expit", _expit_impl, _expit_deriv)`), or
- by a call that takes the primitive (`vjp_rules(stack_p, _stack_vjp)`).

Each attachment must sit within `MAX_DISTANCE` lines of the primitive's creation, and so must
each function it names: `x_p.vjp = _x_vjp` counts the lines between `x_p = ...` and `def
_x_vjp` (the nearer end of it), `x_p.batch = _axis_batch_rule(x_p)` those to
`_axis_batch_rule`, and `x_p.vjp = lambda g, x, *, out: _x_vjp(g, x)` those to the private
function the lambda forwards to. Exempt: functions defined outside `autodiff/ops/`, public
functions of another ops module, and shared rules, which the rules of at least `SHARED`
primitives name. A rule attached in another module than its primitive's, or a private
function of another ops module that fewer primitives use, is an offender: it belongs beside
its primitive.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OPS = ROOT / "autodiff" / "ops"

MAX_LINES = 800
MAX_DISTANCE = 50
SHARED = 3

# The rule slots of `Primitive` and of its `FastPaths` (flags such as `vjp_takes_needs` or
# `saves_inputs` are not rules).
RULES = {"impl", "abstract_eval", "jvp", "vjp", "batch", "fwd"}
FAST_RULES = {"vjp", "fused_vjp", "scalar_impl", "pooled_ufunc"}
CREATION = "creation arguments"


@dataclass
class Module:
    """One ops module: its module-level definitions and where its names come from."""

    name: str
    path: Path
    tree: ast.Module
    definitions: dict = field(default_factory=dict)  # name -> (first line, last line)
    imports: dict = field(default_factory=dict)  # name -> (module, name there)


@dataclass
class Attachment:
    """A rule of `primitive` attached at `line`, naming `functions` ((module, name) pairs)."""

    primitive: tuple  # (module, name)
    what: str
    module: str  # where the attachment is
    line: int
    functions: list


def _span(node) -> tuple:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return first, node.end_lineno


def _load(path: Path) -> Module:
    name = "autodiff.ops." + path.stem
    module = Module(name, path, ast.parse(path.read_text(), str(path)))
    for node in module.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            module.definitions[node.name] = _span(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    module.definitions.setdefault(target.id, _span(node))
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                module.imports[alias.asname or alias.name] = (node.module, alias.name)
    return module


def _resolve(modules: dict, module: Module, name: str):
    """(module, name) where `name`, as `module` sees it, is defined; None for builtins."""
    if name in module.definitions:
        return module.name, name
    if name in module.imports:
        source, there = module.imports[name]
        return source, there
    return None


def _creators(modules: dict) -> set:
    """The functions (module, name) that create a primitive: `Primitive` and every ops
    function whose body calls one of them (a fixed point over the helpers)."""
    creators = {("autodiff.core.primitive", "Primitive")}
    functions = {
        (m.name, node.name): (m, node)
        for m in modules.values()
        for node in m.tree.body
        if isinstance(node, ast.FunctionDef)
    }
    changed = True
    while changed:
        changed = False
        for key, (module, node) in functions.items():
            if key in creators:
                continue
            for call in ast.walk(node):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Name)
                    and _resolve(modules, module, call.func.id) in creators
                ):
                    creators.add(key)
                    changed = True
                    break
    return creators


def _named_functions(value) -> list:
    """The names a rule's value refers to as functions: itself, a call's callee and arguments
    (`partial(_f, ...)`, `_batch_rule(x_p)`), tuples of them, and the private function a
    lambda forwards to (`lambda g, x, *, out: _x_vjp(g, x)`)."""
    if isinstance(value, ast.Name):
        return [value.id]
    if isinstance(value, ast.Call):
        names = _named_functions(value.func)
        for arg in [*value.args, *(k.value for k in value.keywords)]:
            names += _named_functions(arg)
        return names
    if isinstance(value, (ast.Tuple, ast.List)):
        return [n for element in value.elts for n in _named_functions(element)]
    body = value.body if isinstance(value, ast.Lambda) else None
    if isinstance(body, ast.Call) and isinstance(body.func, ast.Name):
        return [body.func.id] if body.func.id.startswith("_") else []
    return []


def _names_in(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _module_statements(body, loops=()):
    """Module-level statements (into `for`, `if`, `with` and `try` bodies), each with the
    iterables of the `for` loops around it: (statement, ((loop target names, iter), ...))."""
    for node in body:
        if isinstance(node, ast.For):
            loop = (_names_in(node.target), node.iter)
            yield from _module_statements(node.body, (*loops, loop))
        elif isinstance(node, (ast.If, ast.With, ast.Try)):
            for part in ("body", "orelse", "finalbody"):
                yield from _module_statements(getattr(node, part, []), loops)
        else:
            yield node, loops


def _rule_target(target):
    """(variable name, rule) for `x.rule = ...` or `x.fast.rule = ...`, else None."""
    if not isinstance(target, ast.Attribute):
        return None
    base = target.value
    if isinstance(base, ast.Name) and target.attr in RULES:
        return base.id, target.attr
    if (
        isinstance(base, ast.Attribute)
        and base.attr == "fast"
        and isinstance(base.value, ast.Name)
        and target.attr in FAST_RULES
    ):
        return base.value.id, "fast." + target.attr
    return None


def _arguments(call: ast.Call) -> list:
    return [*call.args, *(k.value for k in call.keywords)]


def _creations(modules: dict, creators: set):
    """Each primitive's creation span, keyed (module, name), and its creation arguments."""
    created, attachments = {}, []
    for module in modules.values():
        for node, _ in _module_statements(module.tree.body):
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
                continue
            callee = node.value.func
            if isinstance(callee, ast.Name) and _resolve(modules, module, callee.id) in creators:
                functions = _named_functions(ast.Tuple(elts=_arguments(node.value)))
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        key = (module.name, target.id)
                        created[key] = _span(node)
                        attachments.append(
                            Attachment(key, CREATION, module.name, node.lineno, functions)
                        )
    return created, attachments


def _attached(modules: dict, module: Module, node, loops, created: dict):
    """The attachments a module-level statement makes: `x_p.rule = f` (in loops too), or a call
    taking primitives and rules (`vjp_rules(x_p, _x_vjp)`)."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        arguments = _arguments(node.value)
        keys = {_resolve(modules, module, n) for arg in arguments for n in _names_in(arg)}
        functions = _named_functions(node.value)
        call = ast.unparse(node.value.func)
        for key in keys & created.keys():
            yield Attachment(key, f"{call}(...)", module.name, node.lineno, functions)
        return
    for target in node.targets if isinstance(node, ast.Assign) else []:
        found = _rule_target(target)
        if found is None:
            continue
        variable, rule = found
        primitives = {variable}
        for names, iterable in loops:
            if variable in names:
                primitives = _names_in(iterable)
        for name in primitives:
            key = _resolve(modules, module, name)
            if key is not None:
                functions = _named_functions(node.value)
                yield Attachment(key, rule, module.name, node.lineno, functions)


def _scan(modules: dict):
    """Every primitive's creation span, keyed (module, name), and every attachment."""
    created, attachments = _creations(modules, _creators(modules))
    for module in modules.values():
        for node, loops in _module_statements(module.tree.body):
            attachments += _attached(modules, module, node, loops, created)
    return created, attachments


def _resolved(modules: dict, attachment: Attachment):
    module = modules[attachment.module]
    for name in attachment.functions:
        key = _resolve(modules, module, name)
        if key is not None and key[0] in modules:
            yield name, key


def _distance(span: tuple, other: tuple) -> int:
    """Lines between two spans (0 when they overlap)."""
    if other[1] < span[0]:
        return span[0] - other[1]
    return max(0, other[0] - span[1])


def _path(module_name: str) -> str:
    return module_name.replace(".", "/") + ".py"


def _where(module_name: str, line: int) -> str:
    return f"{_path(module_name)}:{line}"


def _attachment_offences(modules: dict, created: dict, attachments: list, users: dict) -> list:
    offences = []
    for a in attachments:
        if a.primitive not in created:
            continue  # (attributes of something else named in a loop)
        module, prim = a.primitive
        span = created[a.primitive]
        at = _where(module, span[0])
        where_attached = _where(a.module, a.line)
        if a.module != module:
            offences.append(f"{prim} ({at}): its {a.what} rule is attached in {where_attached}")
        elif a.what != CREATION:
            gap = _distance(span, (a.line, a.line))
            if gap > MAX_DISTANCE:
                offences.append(f"{prim}.{a.what} attached {gap} lines from it ({where_attached})")
        for name, key in _resolved(modules, a):
            if len(users[key]) >= SHARED:
                continue
            if key[0] != a.module or a.module != module:
                if key[1].startswith("_"):
                    offences.append(
                        f"{prim} ({at}): its {a.what} rule {name} lives in {_path(key[0])}"
                    )
                continue
            gap = _distance(span, modules[key[0]].definitions[key[1]])
            if gap > MAX_DISTANCE:
                attached_in = f"{a.what} rule" if a.what != CREATION else a.what
                offences.append(f"{prim} ({at}): {name} ({attached_in}) defined {gap} lines away")
    return offences


def _layout():
    modules = {m.name: m for m in map(_load, sorted(OPS.glob("*.py")))}
    created, attachments = _scan(modules)
    users = defaultdict(set)  # function (module, name) -> the primitives whose rules name it
    for a in attachments:
        for _, key in _resolved(modules, a):
            users[key].add(a.primitive)
    return modules, created, attachments, users


def test_the_scan_finds_every_kind_of_primitive():
    _, created, attachments, _ = _layout()
    names = {name for _, name in created}
    # Direct, through helpers (elementwise, reduce, special, at) and in loops.
    assert {"matmul_p", "sin_p", "reduce_max_p", "gammainc_p", "index_min_p"} <= names
    assert len(created) > 80
    rules = {(a.primitive[1], a.what) for a in attachments}
    assert {
        ("matmul_p", "vjp"),
        ("real_p", "abstract_eval"),  # (in a loop)
        ("add_p", "fast.scalar_impl"),
        ("stack_p", "vjp_rules(...)"),
        ("gammainc_p", CREATION),
    } <= rules


def test_rules_sit_beside_their_primitive():
    modules, created, attachments, users = _layout()
    offences = _attachment_offences(modules, created, attachments, users)
    assert not offences, (
        f"rules more than {MAX_DISTANCE} lines from their primitive:\n  " + "\n  ".join(offences)
    )


def test_ops_files_are_short():
    long = {
        path.name: n
        for path in sorted(OPS.glob("*.py"))
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"ops/ files over {MAX_LINES} lines: {long}"
