"""torch.autograd.forward_ad on autodiff: make_dual's checks, the tangent's memory, in-place
updates of dual tensors, inference mode, and nested levels (autodiff's extension)."""

import numpy as np
import pytest

import autodiff as ad
import autodiff.autograd.forward_ad as fwAD
from tests.torch_oracle import both


def _fw(torch_module):
    return torch_module.autograd.forward_ad


def _message(fn):
    try:
        fn()
    except RuntimeError as e:
        return str(e)
    return None


def test_tangent_with_a_tangent_at_the_same_level_is_refused_as_torch():
    def run(torch):
        fw = _fw(torch)
        foo, bar, baz = (torch.tensor([1.0, 2.0]) for _ in range(3))
        with fw.dual_level():
            dual = fw.make_dual(foo, bar)
            # the same messages (torch prints "level0"; the level number follows)
            a = _message(lambda: fw.make_dual(baz, dual * 2))
            b = _message(lambda: fw.make_dual(dual, baz))
        return a.replace("level0", "level 0"), b

    ours, theirs = both(run)
    assert ours == theirs
    assert "has a forward gradient at the same level" in ours[0]


def test_dual_shares_storage_and_version_with_its_primal():
    def run(torch):
        fw = _fw(torch)
        foo, bar = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0])
        with fw.dual_level():
            dual = fw.make_dual(foo, bar)
            same = dual.untyped_storage().data_ptr() == foo.untyped_storage().data_ptr()
            foo.add_(1)
            versions = (foo._version, dual._version)
            p, t = fw.unpack_dual(dual)
            return same, versions, dual._is_view(), dual._base is foo, t is bar, dual.numpy()

    ours, theirs = both(run)
    assert ours[:5] == theirs[:5] == (True, (1, 1), True, True, True)
    np.testing.assert_array_equal(ours[5], [2.0, 3.0])


def test_tangent_is_copied_when_its_layout_is_not_the_primals():
    def run(torch):
        fw = _fw(torch)
        primal = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])[:4]
        tangent = torch.tensor([1.0, 1.0, 1.0, 1.0])
        same = torch.tensor([0.0, 1.0, 2.0, 3.0])
        with fw.dual_level():
            dual = fw.make_dual(primal, tangent)
            unpacked = fw.unpack_dual(dual).tangent
            unpacked *= 2  # does not change the caller's tangent
            reused = fw.unpack_dual(fw.make_dual(same, tangent)).tangent is tangent
            return unpacked is tangent, tangent.tolist(), unpacked.stride(), reused

    ours, theirs = both(run)
    assert ours == theirs == (False, [1.0, 1.0, 1.0, 1.0], (1,), True)


def test_tangent_copy_keeps_the_tangents_graph():
    x = ad.tensor([1.0, 2.0, 3.0, 4.0])[1:]
    t = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(fwAD.make_dual(x, t)).tangent
        assert tangent is not t
        (g,) = ad.autograd.grad((tangent * tangent).sum(), t)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0, 6.0])


def test_in_place_update_writes_the_tangent_in_place():
    def run(torch):
        fw = _fw(torch)
        foo, bar = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0])
        with fw.dual_level():
            dual = fw.make_dual(foo, bar)
            dual *= 2
            copy = dual.clone()
            copy *= 3  # a copy's tangent is its own
            return foo.tolist(), bar.tolist(), bar._version, fw.unpack_dual(copy).tangent.tolist()

    ours, theirs = both(run)
    assert ours == theirs == ([2.0, 4.0], [2.0, 2.0], 1, [6.0, 6.0])


def test_in_place_on_dual_with_leaf_tangent_requiring_grad_raises_and_changes_nothing():
    def run(torch):
        fw = _fw(torch)
        foo, bar = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0], requires_grad=True)
        with fw.dual_level():
            dual = fw.make_dual(foo, bar)
            with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
                dual *= 2
            return foo.tolist(), bar.tolist()

    ours, theirs = both(run)
    # (torch has written the primal by then; autodiff checks first and changes nothing)
    assert ours == ([1.0, 2.0], [1.0, 1.0])
    assert theirs[1] == [1.0, 1.0]


def test_make_dual_in_inference_mode_attaches_no_tangent():
    def run(torch):
        fw = _fw(torch)
        with torch.inference_mode():
            foo, bar = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0])
            with fw.dual_level():
                dual = fw.make_dual(foo, bar)
                view = dual._is_view()
                dual += 1
                return view, foo.tolist(), fw.unpack_dual(dual).tangent

    ours, theirs = both(run)
    assert ours == theirs == (False, [2.0, 3.0], None)


def test_nested_levels_unpack_and_pack_in_any_order():
    # e = x + e0 t0 + e1 t1; y = e * e = x^2 + 2x t0 e0 + 2x t1 e1 + 2 t0 t1 e0 e1
    x = ad.tensor([1.0, 2.0])
    t0, t1 = ad.tensor([1.0, 1.0]), ad.tensor([0.5, 0.5])
    with fwAD.dual_level() as l0, fwAD.dual_level() as l1:
        inner_first = fwAD.make_dual(fwAD.make_dual(x, t0, level=l0), t1, level=l1)
        outer_last = fwAD.make_dual(fwAD.make_dual(x, t1, level=l1), t0, level=l0)
        for e in (inner_first, outer_last):
            y = e * e
            p0, d0 = fwAD.unpack_dual(y, level=l0)
            p01, d01 = fwAD.unpack_dual(p0, level=l1)
            np.testing.assert_allclose(p01.numpy(), [1.0, 4.0])  # x^2
            np.testing.assert_allclose(d01.numpy(), [1.0, 2.0])  # 2 x t1
            dd0, dd01 = fwAD.unpack_dual(d0, level=l1)
            np.testing.assert_allclose(dd0.numpy(), [2.0, 4.0])  # 2 x t0
            np.testing.assert_allclose(dd01.numpy(), [1.0, 1.0])  # 2 t0 t1
        # a tangent that is itself dual at the inner level
        z = fwAD.make_dual(x, fwAD.make_dual(t0, t1, level=l1), level=l0)
        d = fwAD.unpack_dual(z * z, level=l0).tangent  # 2 x (t0 + e1 t1) + ... e1 part of x
        np.testing.assert_allclose(fwAD.unpack_dual(d, level=l1).primal.numpy(), [2.0, 4.0])
        np.testing.assert_allclose(fwAD.unpack_dual(d, level=l1).tangent.numpy(), [1.0, 2.0])


def test_level_left_open_inside_a_block_ends_with_it():
    with pytest.raises(RuntimeError, match="still live"):
        with fwAD.dual_level():
            fwAD.enter_dual_level()
    assert fwAD._current_level == -1
    # an error in the block is not hidden by the clean-up
    with pytest.raises(KeyError):
        with fwAD.dual_level():
            fwAD.enter_dual_level()
            raise KeyError("x")
    assert fwAD._current_level == -1


def test_exit_out_of_order_raises_torchs_error_and_keeps_the_levels():
    outer = fwAD.enter_dual_level()
    inner = fwAD.enter_dual_level()
    try:
        with pytest.raises(RuntimeError, match="not the last one that was created"):
            fwAD.exit_dual_level(level=outer)
        assert fwAD._current_level == inner
    finally:
        fwAD.exit_dual_level(level=inner)
        fwAD.exit_dual_level(level=outer)
    assert fwAD._current_level == -1
