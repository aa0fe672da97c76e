"""The public surface: Tensor's attributes come from core/tensor.py and one table, and the
stubs that show the names built at import (tools/make_stubs.py) match the runtime."""

import ast
import importlib
import importlib.util
import pkgutil
from pathlib import Path

import autodiff
import autodiff.numpy as anp
import autodiff.torch._tensor_methods as table
from autodiff.core.tensor import Tensor
from autodiff.ops.index import getitem

ROOT = Path(__file__).resolve().parent.parent
IMPLICIT = {"__module__", "__doc__", "__slots__", "__weakref__", "__dict__", "__annotations__"}
REGENERATE = "run `python tools/make_stubs.py` and commit the stubs it writes"


def _make_stubs():
    spec = importlib.util.spec_from_file_location("make_stubs", ROOT / "tools/make_stubs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _core_definitions() -> set:
    """The names core/tensor.py's class body defines (its slots among them)."""
    source = ast.parse((ROOT / "autodiff/core/tensor.py").read_text())
    (cls,) = [n for n in source.body if isinstance(n, ast.ClassDef) and n.name == "Tensor"]
    names = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets):
                names.update(ast.literal_eval(node.value))
    return names - IMPLICIT


def _stub_names(path: str, class_name: str | None = None) -> set:
    """The names a stub defines at its top level (or in the body of `class_name`)."""
    tree = ast.parse((ROOT / path).read_text())
    body = tree.body
    if class_name is not None:
        (cls,) = [n for n in body if isinstance(n, ast.ClassDef) and n.name == class_name]
        body = cls.body
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):  # re-exports: `from m import x as x`
            names.update(a.asname for a in node.names if a.asname == a.name)
    return names


def test_every_table_entry_is_installed_as_itself():
    for group, members in table.TABLE.items():
        for name, implementation in members.items():
            assert Tensor.__dict__[name] is implementation, (group, name)
    # The hot paths are the functions themselves, not wrappers around them.
    assert Tensor.__getitem__ is getitem
    assert Tensor.exp is anp.exp and Tensor.__neg__ is anp.negative


def _import_every_module():
    """Every module of the package, so that one attaching to Tensor on import would show."""
    for info in pkgutil.walk_packages(autodiff.__path__, "autodiff."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)


def test_nothing_else_is_attached_to_tensor():
    _import_every_module()
    groups = list(table.TABLE.values())
    installed = [name for members in groups for name in members]
    assert len(installed) == len(set(installed)), "a name in two groups of the table"
    core = _core_definitions()
    assert not core & set(installed), "the table overrides core/tensor.py's definitions"
    attached = set(Tensor.__dict__) - IMPLICIT
    assert attached - core - set(installed) == set(), "attached to Tensor outside the table"
    assert (core | set(installed)) - attached == set()


def test_tensor_stub_lists_every_attribute():
    runtime = set(Tensor.__dict__) - IMPLICIT
    stub = _stub_names("autodiff/core/tensor.pyi", "Tensor")
    assert runtime - stub == set(), f"missing from autodiff/core/tensor.pyi: {REGENERATE}"
    assert stub - runtime == set(), f"not on Tensor at runtime: {REGENERATE}"


def test_tensor_stub_lists_the_whole_module():
    source = ast.parse((ROOT / "autodiff/core/tensor.py").read_text())
    defined = set()
    for node in source.body:
        if isinstance(node, ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
    stub = _stub_names("autodiff/core/tensor.pyi")
    assert defined - stub == set(), REGENERATE
    # Beyond them, only the stubs of the classes from above core/ that its annotations name.
    assert stub - defined == _type_only_classes("autodiff/core/tensor.pyi"), REGENERATE


def _type_only_classes(path: str) -> set:
    """The classes a stub defines as type-only copies of classes from a layer above it."""
    return {
        node.name
        for node in ast.parse((ROOT / path).read_text()).body
        if isinstance(node, ast.ClassDef)
        and (ast.get_docstring(node) or "").startswith("Type-only:")
    }


def test_numpy_stub_lists_every_name():
    runtime = {
        name
        for name, value in vars(anp).items()
        if (not name.startswith("_") or name == "__all__") and type(value).__name__ != "_Feature"
    }
    # (and the names loaded on first use, through the module's __getattr__: `random`)
    runtime |= {name for name in anp.__all__ if hasattr(anp, name)}
    stub = _stub_names("autodiff/numpy/__init__.pyi")
    assert runtime - stub == set(), f"missing from autodiff/numpy/__init__.pyi: {REGENERATE}"
    assert stub - runtime == set(), f"not in autodiff.numpy at runtime: {REGENERATE}"


def test_stubs_are_up_to_date():
    """Signatures and types too: the stubs are exactly what the generator writes now."""
    assert _make_stubs().outdated() == [], REGENERATE


def test_torch_functions_are_plain_names_of_autodiff():
    # Explicit imports (no `globals().update`): editors and type checkers see them.
    source = (ROOT / "autodiff/__init__.py").read_text()
    assert "globals()" not in source
    assert autodiff.tanh is anp.tanh and autodiff.cat([anp.ones(1)]).shape == (1,)
