"""Pytrees as jax.tree_util has them: is_leaf, key paths, registration helpers, prefix trees,
OrderedDict/defaultdict nodes; compared with JAX's own results when JAX is installed."""

import collections
import dataclasses

import numpy as np
import pytest

import autodiff as ad
from autodiff import tree_util as tu

Point = collections.namedtuple("Point", ["x", "y"])


def _tree():
    return {
        "a": [1.0, (2.0, None)],
        "b": Point(3.0, 4.0),
        "c": collections.OrderedDict([("z", 5.0), ("y", 6.0)]),
    }


def test_is_leaf_stops_flattening():
    tree = [1.0, None, (2.0, None)]
    assert tu.tree_leaves(tree) == [1.0, 2.0]
    assert tu.tree_leaves(tree, is_leaf=lambda x: x is None) == [1.0, None, 2.0, None]
    assert tu.tree_map(lambda x: x is None, tree, is_leaf=lambda x: x is None) == [
        False,
        True,
        (False, True),
    ]
    leaves, td = tu.tree_flatten({"p": (1, 2), "q": 3}, is_leaf=lambda x: isinstance(x, tuple))
    assert leaves == [(1, 2), 3] and tu.tree_unflatten(td, ["P", "Q"]) == {"p": "P", "q": "Q"}


def test_tree_map_takes_a_prefix_structure_first():
    out = tu.tree_map(lambda a, b: (a, b), {"x": 1, "y": 2}, {"x": [3, 4], "y": 5})
    assert out == {"x": (1, [3, 4]), "y": (2, 5)}
    with pytest.raises(ValueError, match="pytree structure error"):
        tu.tree_map(lambda a, b: a, {"x": [1, 2]}, {"x": None}, is_leaf=lambda v: v is None)


def test_key_paths_and_keystr():
    pairs, _ = tu.tree_flatten_with_path(_tree())
    paths = [tu.keystr(p) for p, _ in pairs]
    assert paths == [
        "['a'][0]",
        "['a'][1][0]",
        "['b'].x",
        "['b'].y",
        "['c']['z']",
        "['c']['y']",
    ]
    assert [v for _, v in pairs] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    path = pairs[2][0]
    assert path == (tu.DictKey("b"), tu.GetAttrKey("x"))
    assert tu.keystr(path, simple=True, separator="/") == "b/x"
    assert isinstance(path[0], tu.DictKey) and path[0].key == "b"
    assert tu.SequenceKey(3).idx == 3 and str(tu.SequenceKey(3)) == "[3]"


def test_tree_map_with_path():
    out = tu.tree_map_with_path(lambda p, v: f"{tu.keystr(p)}:{v}", {"w": [1, 2], "b": 3})
    assert out == {"b": "['b']:3", "w": ["['w'][0]:1", "['w'][1]:2"]}
    out = tu.tree_map_with_path(lambda p, a, b: a + b, (1, 2), (10, 20))
    assert out == (11, 22)


def test_ordered_and_default_dicts_are_nodes():
    od = collections.OrderedDict([("b", 1.0), ("a", 2.0)])
    leaves, td = tu.tree_flatten(od)
    assert leaves == [1.0, 2.0]  # insertion order, as JAX
    back = tu.tree_unflatten(td, [10.0, 20.0])
    assert type(back) is collections.OrderedDict and list(back.items()) == [
        ("b", 10.0),
        ("a", 20.0),
    ]
    dd = collections.defaultdict(list, {"y": 1.0, "x": 2.0})
    leaves, td = tu.tree_flatten(dd)
    assert leaves == [2.0, 1.0]  # sorted keys, as a dict
    back = tu.tree_unflatten(td, [0.0, 0.0])
    assert type(back) is collections.defaultdict and back.default_factory is list
    g = ad.grad(lambda d: d["a"] * d["b"])(od)
    assert type(g) is collections.OrderedDict and g["a"] == 1.0 and g["b"] == 2.0


def test_register_pytree_node_class():
    @tu.register_pytree_node_class
    class Scaled:
        def __init__(self, value, scale):
            self.value, self.scale = value, scale

        def tree_flatten(self):
            return (self.value,), self.scale

        @classmethod
        def tree_unflatten(cls, scale, children):
            return cls(children[0], scale)

    g = ad.grad(lambda s: s.value**2 * s.scale)(Scaled(3.0, 2.0))
    assert isinstance(g, Scaled) and g.value == 12.0 and g.scale == 2.0
    pairs, _ = tu.tree_flatten_with_path(Scaled(1.0, 0))
    assert tu.keystr(pairs[0][0]) == "[<flat index 0>]"
    with pytest.raises(ValueError, match="Duplicate pytree node registration"):
        tu.register_pytree_node_class(Scaled)


def test_register_pytree_with_keys():
    class Params:
        def __init__(self, w, b):
            self.w, self.b = w, b

    tu.register_pytree_with_keys(
        Params,
        lambda p: (((tu.GetAttrKey("w"), p.w), (tu.GetAttrKey("b"), p.b)), None),
        lambda _, children: Params(*children),
    )
    p = Params(np.ones(2), 0.5)
    assert [tu.keystr(k) for k, _ in tu.tree_leaves_with_path(p)] == [".w", ".b"]
    g = ad.grad(lambda p: (p.w * p.b).sum())(p)
    np.testing.assert_allclose(g.w, [0.5, 0.5])
    assert float(g.b) == 2.0


def test_register_dataclass():
    @tu.register_dataclass
    @dataclasses.dataclass
    class Layer:
        w: np.ndarray
        name: str = dataclasses.field(default="dense", metadata={"static": True})

    layer = Layer(np.array([1.0, 2.0]))
    assert [tu.keystr(k) for k, _ in tu.tree_leaves_with_path(layer)] == [".w"]
    g = ad.grad(lambda lay: (lay.w**2).sum())(layer)
    assert g.name == "dense"
    np.testing.assert_allclose(g.w, [2.0, 4.0])


def test_reduce_all_and_prefix_errors():
    assert tu.tree_reduce(lambda a, b: a + b, {"a": 1, "b": (2, 3)}) == 6
    assert tu.tree_all([True, (1,)]) and not tu.tree_all({"x": 0})
    assert tu.treedef_is_leaf(tu.tree_structure(1.0))
    assert tu.prefix_errors((0, 1), (1.0, 2.0)) == []
    (msg,) = tu.prefix_errors((0, 1, 2), (1.0, 2.0), "in_axes")
    assert msg.startswith("pytree structure error: different lengths of tuple at key path")
    assert "in_axes" in msg


def test_autodiff_tree_util_is_jax_tree_util():
    jtu = pytest.importorskip("jax.tree_util")
    tree = _tree()
    ours = [(tu.keystr(p), v) for p, v in tu.tree_flatten_with_path(tree)[0]]
    theirs = [(jtu.keystr(p), v) for p, v in jtu.tree_flatten_with_path(tree)[0]]
    assert ours == theirs
    assert tu.tree_leaves(tree, is_leaf=lambda x: x is None) == jtu.tree_leaves(
        tree, is_leaf=lambda x: x is None
    )
    dd = collections.defaultdict(int, {"b": 1, "a": 2})
    assert tu.tree_leaves(dd) == jtu.tree_leaves(dd)
