"""The torch face's surface: `import autodiff as torch` runs torch's expressions unchanged.

Each expression of `EXPRESSIONS` runs twice, with `T` bound to autodiff and to real torch
(when it is installed: `pytest.importorskip`), on the same inputs: the values must agree,
and where the result is a float tensor that requires grad, so must the gradients of a
weighted sum of it with respect to every input. The other tests check what needs no peer:
`torch.Size`, dtypes, devices, the generator, save/load, and clear errors.
"""

from __future__ import annotations

import io
import pickle
import threading
import warnings

import numpy as np
import pytest

import autodiff
import autodiff as T_ad
from autodiff.core.sizes import Size

# ---- the inputs: the same values for both libraries ----
_RNG = np.random.default_rng(0)
X = _RNG.permutation(12).reshape(3, 4) / 4.0 - 1.3  # distinct values: no ties in sorts
Y = _RNG.standard_normal((3, 4))
V = np.array([0.5, -1.25, 2.0, 0.75])
A3 = _RNG.standard_normal((2, 3, 4))
SQ = _RNG.standard_normal((3, 3)) + 3 * np.eye(3)
C = np.array([1.0 + 2.0j, -0.5 + 0.25j])


def inputs(T) -> dict:
    """The same tensors, made with `T` (autodiff or torch)."""
    f64 = T.float64
    return {
        "T": T,
        "X": X,
        "x": T.tensor(X, dtype=f64, requires_grad=True),
        "y": T.tensor(Y, dtype=f64, requires_grad=True),
        "v": T.tensor(V, dtype=f64, requires_grad=True),
        "a": T.tensor(A3, dtype=f64, requires_grad=True),
        "sq": T.tensor(SQ, dtype=f64, requires_grad=True),
        "c": T.tensor(C, dtype=T.complex128),
        "xc": T.tensor(X, dtype=f64),  # (no grad: for in-place methods)
        "m": T.tensor(X > 0),
        "i": T.tensor([[0, 2, 1, 0], [1, 0, 2, 2], [2, 1, 0, 1]]),
        "j": T.tensor([2, 0]),
        "k": T.tensor([[0, 3], [1, 1], [2, 0]]),
    }


GRAD_INPUTS = ("x", "y", "v", "a", "sq")

# torch expressions; each runs with T = autodiff and T = torch.
EXPRESSIONS = [
    # ---- sizes, dims, dtypes, devices ----
    "x.size()",
    "x.size(0)",
    "x.size(-1)",
    "x.size(dim=1)",
    "a.size()[1:]",
    "x.dim()",
    "x.ndimension()",
    "x.numel()",
    "x.nelement()",
    "x.element_size()",
    "x.shape",
    "str(x.device)",
    "x.is_cuda",
    "x.cpu().sum()",
    "x.to(T.float32).dtype == T.float32",
    "x.to('cpu').sum()",
    "x.to(dtype=T.float64, device='cpu').sum()",
    "x.to(v).dtype == T.float64",
    "x.type()",
    "x.float().type()",
    "x.long().type()",
    "x.type(T.float32).dtype == T.float32",
    "x.double().sum()",
    "x.int().sum()",
    "x.long()",
    "x.bool()",
    "x.half().dtype == T.float16",
    "x.is_floating_point()",
    "c.is_complex()",
    "x.t().is_contiguous()",
    "x.is_contiguous()",
    "x.t().contiguous().is_contiguous()",
    "x.t().contiguous() * 2",
    "x.stride()",
    "x.t().stride()",
    "x[1].storage_offset()",
    "x.itemsize",
    "x.nbytes",
    "x.output_nr",
    "T.numel(x)",
    "T.is_tensor(x)",
    "T.is_tensor(3)",
    "T.is_floating_point(x)",
    "T.is_complex(c)",
    # ---- views and shapes ----
    "x.view(4, 3)",
    "x.view(-1)",
    "x.view((2, 6))",
    "x.view_as(y.t())",
    "x.reshape(2, -1)",
    "x.reshape_as(y.t())",
    "v.expand(3, 4)",
    "v.expand(2, -1, -1) if False else v.expand(2, 3, 4)",
    "x[:1].expand(3, -1)",
    "v.expand_as(x)",
    "x.narrow(1, 1, 2)",
    "x.narrow(0, -2, 2)",
    "x.select(1, 2)",
    "x.select(0, -1)",
    "x.chunk(2, 1)",
    "x.chunk(3)",
    "x.split(3, 1)",
    "x.split([1, 3], 1)",
    "x.split(2)",
    "x.tensor_split(3, 1)",
    "x.unbind(1)",
    "x.unsqueeze(0)",
    "x.unsqueeze(-1)",
    "x.unsqueeze(0).squeeze(0)",
    "x.unsqueeze(1).squeeze()",
    "x.squeeze(0)",
    "a.permute(2, 0, 1)",
    "a.permute((1, 2, 0))",
    "a.movedim(0, 2)",
    "a.movedim((0, 1), (2, 0))",
    "a.flatten()",
    "a.flatten(1)",
    "a.flatten(0, 1)",
    "x.unflatten(1, (2, 2))",
    "x.unflatten(1, (-1, 2))",
    "x.t()",
    "v.t()",
    "x.T",
    "a.mT",
    "a.transpose(0, 2)",
    "x.transpose(0, 1)",
    "x.transpose(-1, -2)",
    "x.swapaxes(0, 1)",
    "x.swapdims(0, 1)",
    "x.as_strided((2, 2), (1, 2))",
    "x.as_strided((3, 3), (1, 1), 1)",
    "x.flip(0)",
    "x.flip(0, 1)",
    "x.flip([1])",
    "x.fliplr()",
    "x.flipud()",
    "x.roll(1)",
    "x.roll(1, 1)",
    "x.roll((1, -1), (0, 1))",
    "x.rot90()",
    "x.rot90(2)",
    "x.rot90(-1, (0, 1))",
    "x.tril()",
    "x.triu(1)",
    "x.tril(-1)",
    "x.repeat(2, 1)",
    "x.repeat(1, 2, 1)",
    "v.repeat(3)",
    "x.repeat_interleave(2)",
    "x.repeat_interleave(2, dim=1)",
    "x.repeat_interleave(T.tensor([1, 0, 2]), dim=0)",
    "x.tile((2,))",
    "x.tile((2, 1))",
    "v.diag()",
    "v.diag(1)",
    "x.diag()",
    "x.diagonal()",
    "x.diagonal(1)",
    "a.diagonal(0, 1, 2)",
    "a.diagonal(dim1=0, dim2=2)",
    "v.diag_embed()",
    "x.diag_embed(1)",
    "x.trace()",
    "x.clone()",
    "x.contiguous()",
    "x.sum_to_size(1, 4)",
    "x.sum_to_size(3, 1)",
    # ---- indexing ----
    "x.index_select(1, j)",
    "x.index_select(0, T.tensor([2, 2, 0]))",
    "x.masked_select(m)",
    "x.masked_select(m[0])",
    "x.masked_fill(m, 0.5)",
    "x.masked_fill(m, v[1])",
    "x.masked_scatter(m, y)",
    "x.gather(1, i)",
    "x.gather(0, i)",
    "x.gather(1, k)",
    "x.take(T.tensor([0, 5, 11]))",
    "x.take_along_dim(i, 1)",
    "x.scatter(1, k, y[:, :2])",
    "x.scatter(0, i[:2], y[:2])",
    "x.scatter(1, k, 2.5)",
    "x.scatter_add(1, k, y[:, :2])",
    "x.scatter_add(0, i, y)",
    "xc.scatter(1, k, y.detach(), reduce='add')",
    "x.scatter_reduce(1, k, y[:, :2], 'sum')",
    "x.scatter_reduce(1, k, y[:, :2], 'amax')",
    "x.scatter_reduce(1, k, y[:, :2], 'prod', include_self=False)",
    "x.scatter_reduce(0, i, y, 'mean')",
    "x.index_add(1, j, y[:, :2])",
    "x.index_add(0, T.tensor([0, 0]), y[:2], alpha=2)",
    "x.index_copy(1, j, y[:, :2])",
    "x.index_fill(1, j, -1.0)",
    "x.index_put((T.tensor([0, 2]), T.tensor([1, 1])), v[:2])",
    "x.index_put((T.tensor([0, 0]), T.tensor([1, 1])), v[:2], accumulate=True)",
    "x.put(T.tensor([0, 5]), v[:2])",
    "x.nonzero()",
    "x.nonzero(as_tuple=True)",
    "T.nonzero(m)",
    "T.where(m)",
    "T.argwhere(m)",
    "x.where(m, y)",
    "T.where(m, x, y)",
    "T.where(m, x, 0.0)",
    # ---- reductions: dim= and keepdim= (and NumPy's spellings) ----
    "x.sum()",
    "x.sum(1)",
    "x.sum(dim=0)",
    "x.sum(1, True)",
    "x.sum(dim=(0, 1))",
    "x.sum([0, 1], keepdim=True)",
    "x.sum(axis=1, keepdims=True)",
    "x.sum(dtype=T.float32).dtype == T.float32",
    "T.sum(x, 1)",
    "T.sum(x, dim=1, keepdim=True)",
    "T.sum(x, axis=0)",
    "x.mean()",
    "x.mean(1)",
    "x.mean(-1, keepdim=True)",
    "T.mean(x, (0, 1))",
    "x.prod()",
    "x.prod(1)",
    "x.prod(0, True)",
    "T.prod(x, 1)",
    "x.std()",
    "x.std(1)",
    "x.std(1, False)",
    "x.std(dim=0, correction=0)",
    "x.var()",
    "x.var(0)",
    "x.var(1, keepdim=True)",
    "x.var(unbiased=False)",
    "x.var(False)",
    "T.var(x, 1)",
    "T.std(x, dim=1, unbiased=True, keepdim=True)",
    "T.var_mean(x)",
    "T.var_mean(x, 1, keepdim=True)",
    "T.std_mean(x, 0)",
    "T.std_mean(x, unbiased=False)",
    "x.max()",
    "x.max(1)",
    "x.max(0, True)",
    "x.max(dim=1).values",
    "x.max(dim=1).indices",
    "x.max(y)",
    "x.min()",
    "x.min(1)",
    "x.min(dim=0, keepdim=True)",
    "x.min(y)",
    "T.max(x)",
    "T.max(x, 1)",
    "T.max(x, dim=1, keepdim=True)",
    "T.max(x, y)",
    "T.min(x, 0)",
    "T.min(x, y)",
    "x.amax()",
    "x.amax(1)",
    "x.amin((0, 1))",
    "x.argmax()",
    "x.argmax(1)",
    "x.argmax(1, True)",
    "x.argmin(dim=0)",
    "T.argmax(x)",
    "T.argmin(x, 1)",
    "m.all()",
    "m.all(1)",
    "m.any(0)",
    "m.any(1, True)",
    "T.all(m)",
    "T.any(m, 1)",
    "x.logsumexp(1)",
    "x.logsumexp(dim=(0, 1))",
    "x.logsumexp(0, keepdim=True)",
    "T.logsumexp(x, 1)",
    "x.softmax(1)",
    "x.softmax(dim=0)",
    "x.log_softmax(-1)",
    "T.softmax(x, 1)",
    "T.log_softmax(x, dim=0)",
    "x.cumsum(1)",
    "x.cumsum(dim=0)",
    "x.cumprod(1)",
    "T.cumsum(x, 0)",
    "T.cumprod(x, dim=1)",
    "x.norm()",
    "x.norm(1)",
    "x.norm(dim=1)",
    "x.norm(2, 1, True)",
    "x.norm(p=float('inf'))",
    "x.norm(p=3, dim=0)",
    "x.norm(p='fro')",
    "T.norm(x, dim=(0, 1))",
    "x.dist(y)",
    "x.dist(y, 1)",
    "x.median()",
    "x.median(1)",
    "x.sort()",
    "x.sort(0)",
    "x.sort(1, True)",
    "x.sort(dim=0, descending=True)",
    "T.sort(x, 1)",
    "x.argsort()",
    "x.argsort(0, True)",
    "x.argsort(descending=True)",
    "x.topk(2)",
    "x.topk(2, 0, largest=False)",
    "x.kthvalue(2)",
    "x.kthvalue(1, 0, True)",
    "x.count_nonzero()",
    "m.count_nonzero(1)",
    "x.nansum()",
    "x.nanmean(1)",
    "T.count_nonzero(m, 0)",
    # ---- arithmetic methods (and their in-place forms below) ----
    "x.add(y)",
    "x.add(y, alpha=2)",
    "x.add(1.5)",
    "x.sub(y, alpha=0.5)",
    "x.subtract(y)",
    "x.mul(y)",
    "x.multiply(2)",
    "x.div(y)",
    "x.div(2, rounding_mode='floor')",
    "x.div(0.3, rounding_mode='trunc')",
    "x.divide(y)",
    "x.true_divide(y)",
    "xc.floor_divide(0.7)",
    "x.remainder(0.7)",
    "x.fmod(0.7)",
    "x.pow(2)",
    "(x.abs() + 0.1).pow(y)",
    "x.abs().pow(0.5)",
    "x.float_power(2)",
    "x.neg()",
    "x.negative()",
    "x.abs()",
    "x.absolute()",
    "x.exp()",
    "x.exp2()",
    "x.expm1()",
    "x.abs().log()",
    "x.abs().log2()",
    "x.abs().log10()",
    "x.abs().log1p()",
    "x.abs().sqrt()",
    "x.abs().rsqrt()",
    "x.square()",
    "x.sin()",
    "x.cos()",
    "x.tan()",
    "(x / 4).asin()",
    "(x / 4).acos()",
    "x.atan()",
    "(x / 4).arcsin()",
    "x.sinh()",
    "x.cosh()",
    "x.tanh()",
    "x.asinh()",
    "(x.abs() + 1).acosh()",
    "(x / 4).atanh()",
    "x.sigmoid()",
    "(x.sigmoid()).logit()",
    "x.relu()",
    "x.reciprocal()",
    "x.sign()",
    "x.sgn()",
    "x.floor()",
    "x.ceil()",
    "x.trunc()",
    "x.frac()",
    "x.round()",
    "x.round(decimals=1)",
    "x.erf()",
    "x.erfc()",
    "(x / 4).erfinv()",
    "(x.abs() + 0.5).lgamma()",
    "(x.abs() + 0.5).digamma()",
    "x.deg2rad()",
    "x.rad2deg()",
    "x.atan2(y)",
    "x.arctan2(y)",
    "x.hypot(y)",
    "x.maximum(y)",
    "x.minimum(y)",
    "x.fmax(y)",
    "x.fmin(y)",
    "x.lerp(y, 0.3)",
    "x.addcmul(y, v, value=0.5)",
    "x.addcdiv(y, v, value=2)",
    "x.abs().xlogy(y.abs())",
    "x.logaddexp(y)",
    "x.clamp(-0.5, 0.5)",
    "x.clamp(min=0.0)",
    "x.clamp(max=v)",
    "x.clamp(v[0], v[2])",
    "x.clamp_min(0.1)",
    "x.clamp_max(0.1)",
    "x.clip(-0.5, 0.5)",
    "x.clip(min=0.25)",
    "T.clamp(x, min=-0.3)",
    "T.clip(x, -0.3, 0.3)",
    "x.eq(y)",
    "x.ne(x)",
    "x.lt(y)",
    "x.le(0.5)",
    "x.gt(y)",
    "x.ge(y)",
    "x.greater(y)",
    "x.less_equal(y)",
    "x.not_equal(y)",
    "m.logical_and(x > -0.5)",
    "m.logical_or(x > 0.5)",
    "m.logical_xor(x > 0.5)",
    "m.logical_not()",
    "x.isnan()",
    "x.isinf()",
    "x.isfinite()",
    "x.signbit()",
    "x.equal(x)",
    "x.equal(y)",
    "x.allclose(x + 1e-12)",
    "x.isclose(y)",
    "x.nan_to_num()",
    # ---- products ----
    "x.matmul(y.t())",
    "x.mm(y.t())",
    "a.bmm(a.transpose(1, 2))",
    "x.mv(v)",
    "v.dot(v)",
    "v.vdot(v)",
    "v.inner(v)",
    "x.inner(y)",
    "v.outer(v)",
    "v.ger(v[:3])",
    "sq.addmm(x[:, :3], sq)",
    "sq.addmm(x[:, :3], sq, beta=0.5, alpha=2)",
    "v.addmv(y.t(), x[:, 0])",
    "x.addr(x[:, 0], v)",
    "a.baddbmm(a, a.transpose(1, 2)[:, :, :4], beta=0.5) if False else a[:, :, :3].baddbmm(a, a.transpose(1, 2))",
    "sq.addbmm(a[:, :, :3].transpose(1, 2), a[:, :, :3])",
    "sq.det()",
    "sq.inverse()",
    "sq.logdet()",
    "sq.slogdet()",
    "sq.matrix_power(3)",
    "sq.kron(x[:2, :2])",
    "T.einsum('ij,kj->ik', x, y)",
    "T.einsum('ij,kj->ik', [x, y])",
    "T.tensordot(x, y, dims=([1], [1]))",
    "T.tensordot(x, y.t(), dims=1)",
    "T.matmul(x, y.t())",
    "T.mm(x, y.t())",
    "T.bmm(a, a.transpose(1, 2))",
    "T.mv(x, v)",
    "T.dot(v, v)",
    "T.outer(v, v)",
    "T.addmm(sq, x[:, :3], sq)",
    "T.cross(x[:, :3], y[:, :3], dim=1)",
    "T.kron(v[:2], v)",
    "T.cdist(x, y)",
    "T.trace(sq)",
    "T.det(sq)",
    "T.inverse(sq)",
    "T.chain_matmul(x, y.t(), x)",
    # ---- torch.* functions ----
    "T.cat([x, y])",
    "T.cat([x, y], 1)",
    "T.cat((x, y), dim=-1)",
    "T.cat([x, y], axis=1)",
    "T.cat([T.tensor([], dtype=T.float64), v])",
    "T.concat([x, y])",
    "T.concatenate([x, y], 1)",
    "T.stack([x, y])",
    "T.stack([x, y], dim=2)",
    "T.stack((v, v), -1)",
    "T.hstack([x, y])",
    "T.vstack([x, y])",
    "T.dstack([x, y])",
    "T.column_stack([v, v])",
    "T.split(x, 2, 1)",
    "T.split(x, [1, 2])",
    "T.chunk(x, 2, 1)",
    "T.narrow(x, 1, 1, 2)",
    "T.unbind(x, 1)",
    "T.select(x, 1, 0)",
    "T.squeeze(x.unsqueeze(0))",
    "T.squeeze(x.unsqueeze(1), 1)",
    "T.unsqueeze(v, 0)",
    "T.flatten(a)",
    "T.flatten(a, 1)",
    "T.unflatten(x, 1, (2, 2))",
    "T.reshape(x, (4, 3))",
    "T.reshape(x, (-1,))",
    "T.transpose(a, 0, 1)",
    "T.swapaxes(a, 0, 2)",
    "T.t(x)",
    "T.permute(a, (2, 0, 1))",
    "T.movedim(a, 0, -1)",
    "T.gather(x, 1, i)",
    "T.scatter(x, 1, k, y[:, :2])",
    "T.scatter_add(x, 0, i, y)",
    "T.index_select(x, 1, j)",
    "T.masked_select(x, m)",
    "T.take(x, T.tensor([1, 7]))",
    "T.take_along_dim(x, i, 1)",
    "T.flip(x, [0, 1])",
    "T.roll(x, 2)",
    "T.rot90(x, 1, [0, 1])",
    "T.tril(x)",
    "T.triu(x, -1)",
    "T.diag(v)",
    "T.diag_embed(x)",
    "T.diagonal(a, 0, 0, 1)",
    "T.repeat_interleave(v, 2)",
    "T.tile(v, (2,))",
    "T.broadcast_tensors(v, x)",
    "T.broadcast_to(v, (3, 4))",
    "T.broadcast_shapes((3, 1), (4,))",
    "T.meshgrid(v, v[:2], indexing='ij')",
    "T.meshgrid(v, v[:2], indexing='xy')",
    "T.atleast_2d(v)",
    "T.add(x, y)",
    "T.add(x, y, alpha=3)",
    "T.sub(x, y)",
    "T.sub(x, 1.0, alpha=2)",
    "T.mul(x, y)",
    "T.div(x, y)",
    "T.div(x, 0.4, rounding_mode='floor')",
    "T.true_divide(x, y)",
    "T.neg(x)",
    "T.abs(x)",
    "T.exp(x)",
    "T.log(x.abs())",
    "T.sqrt(x.abs())",
    "T.rsqrt(x.abs())",
    "T.pow(x, 2)",
    "T.pow(2.0, x)",
    "T.sigmoid(x)",
    "T.tanh(x)",
    "T.relu(x)",
    "T.erf(x)",
    "T.atan2(x, y)",
    "T.hypot(x, y)",
    "T.maximum(x, y)",
    "T.minimum(x, y)",
    "T.lerp(x, y, 0.25)",
    "T.addcmul(x, y, v, value=2)",
    "T.addcdiv(x, y, v)",
    "T.remainder(x, 0.7)",
    "T.fmod(x, 0.7)",
    "T.frac(x)",
    "T.sgn(x)",
    "T.logit(x.sigmoid(), eps=1e-6)",
    "T.xlogy(x.abs(), y.abs())",
    "T.round(x)",
    "T.floor(x)",
    "T.sign(x)",
    "T.square(x)",
    "T.eq(x, y)",
    "T.gt(x, 0)",
    "T.logical_not(m)",
    "T.isnan(x)",
    "T.allclose(x, x)",
    "T.allclose(x, y)",
    "T.isclose(x, x + 1e-9)",
    "T.equal(x, x)",
    "T.median(x)",
    "T.topk(v, 2)",
    "T.kthvalue(v, 2)",
    "T.argsort(v, descending=True)",
    "T.dist(x, y, 2)",
    "T.norm(x, 1, 1)",
    "T.real(c)",
    "T.imag(c)",
    "c.real",
    "c.imag",
    "T.conj(c)",
    "T.view_as_real(c)",
    "T.view_as_complex(x.reshape(6, 2))",
    "T.complex(x, y)",
    "T.polar(x.abs(), y)",
    "T.angle(c)",
    "T.searchsorted(T.tensor([1.0, 3.0, 5.0]), T.tensor([2.0, 6.0]))",
    "T.unique(T.tensor([3, 1, 3, 2]))",
    "T.unique(T.tensor([3, 1, 3, 2]), return_counts=True)",
    # ---- factories ----
    "T.zeros(2, 3)",
    "T.zeros((2, 3), dtype=T.int64)",
    "T.zeros(T.Size([2, 3]))",
    "T.ones(2, dtype=T.float64, device='cpu')",
    "T.empty(2, 3).shape",
    "T.full((2, 2), 3)",
    "T.full((2,), 1.5, dtype=T.float64)",
    "T.full((2,), True)",
    "T.arange(5)",
    "T.arange(1, 4, dtype=T.float64)",
    "T.arange(0.0, 1.0, 0.25, dtype=T.float64)",
    "T.linspace(0, 1, 5, dtype=T.float64)",
    "T.logspace(0, 2, 3, dtype=T.float64)",
    "T.eye(3)",
    "T.eye(2, 3, dtype=T.int64)",
    "T.tensor([1, 2]).dtype == T.int64",
    "T.tensor([True]).dtype == T.bool",
    "T.tensor(X).dtype == T.float64",
    "T.tensor([1.5], dtype=T.float64)",
    "T.tensor([[1, 2]], dtype=T.float64)",
    "T.as_tensor([1.0, 2.0], dtype=T.float64)",
    "T.zeros_like(x)",
    "T.zeros_like(x, dtype=T.int64)",
    "T.ones_like(x, dtype=T.float32).dtype == T.float32",
    "T.full_like(x, 7.0)",
    "T.empty_like(x).shape",
    "T.rand_like(x).shape",
    "T.randn_like(x).dtype == T.float64",
    "T.randint(3, (2, 5)).shape",
    "T.randint(2, 5, (3,)).dtype == T.int64",
    "T.randint_like(x, 10).shape",
    "T.randperm(6).sort().values",
    "T.rand(2, 3, dtype=T.float64).shape",
    "T.randn((4,), dtype=T.float64).shape",
    "T.normal(0.0, 1.0, (3,)).shape",
    "T.normal(T.zeros(2, 3), 1.0).shape",
    "x.new_zeros(2)",
    "x.new_zeros((2, 3))",
    "x.new_ones(3)",
    "x.new_full((2,), 4)",
    "x.new_empty((2, 2)).shape",
    "x.new_tensor([1, 2])",
    "x.new_tensor([1, 2]).dtype == T.float64",
    "T.FloatTensor([1, 2]).dtype == T.float32",
    "T.DoubleTensor(2, 3).shape",
    "T.LongTensor([1, 2])",
    "T.BoolTensor([True, False])",
    "isinstance(x, T.DoubleTensor)",
    "isinstance(x, T.FloatTensor)",
    "isinstance(T.tensor([1]), T.LongTensor)",
    "T.Size([2, 3])",
    "T.Size([2, 3]).numel()",
    "T.Size([2, 3]) + (4,)",
    "x.size() == (3, 4)",
    "x.size() == T.Size([3, 4])",
    "T.finfo(T.float64).eps",
    "T.finfo(T.float32).max",
    "T.iinfo(T.int32).max",
    "str(T.promote_types(T.int32, T.float32))",
    "str(T.result_type(x, 1))",
    "T.can_cast(T.float64, T.int32)",
    "str(T.float64)",
    "str(T.long)",
    "T.float == T.float32",
    "T.double == T.float64",
    "T.half == T.float16",
    "T.long == T.int64",
    "T.int == T.int32",
    "T.cfloat == T.complex64",
    "T.cdouble == T.complex128",
    "T.float64.is_floating_point",
    "T.int64.is_floating_point",
    "T.complex64.is_complex",
    "T.float32.itemsize",
    "str(T.complex64.to_real())",
    "str(T.float64.to_complex())",
    "x.dtype == T.float64",
    "x.dtype == T.double",
    "x.dtype != T.float32",
    "x.long().dtype == T.long",
    "T.tensor([1, 2], dtype=T.int32).dtype == T.int",
    "T.get_default_dtype() == T.get_default_dtype()",
    "str(T.device('cpu'))",
    "T.device('cpu').type",
    "T.device('cpu') == T.device('cpu')",
    "x.get_device()",
    "len(x.chunk(2))",
]

# In-place methods: run on clones (`xc` has no grad), compared by value and version.
IN_PLACE = [
    "xc.add_(y.detach())",
    "xc.add_(y.detach(), alpha=2)",
    "xc.sub_(1.0)",
    "xc.mul_(2)",
    "xc.div_(4)",
    "xc.pow_(2)",
    "xc.neg_()",
    "xc.abs_()",
    "xc.exp_()",
    "xc.abs_().log_()",
    "xc.abs_().sqrt_()",
    "xc.sigmoid_()",
    "xc.tanh_()",
    "xc.relu_()",
    "xc.clamp_(-0.5, 0.5)",
    "xc.clamp_(min=0)",
    "xc.clip_(0, 1)",
    "xc.zero_()",
    "xc.fill_(3.5)",
    "xc.copy_(y.detach())",
    "xc.copy_(v.detach())",
    "xc.masked_fill_(m, 0.0)",
    "xc.index_add_(1, j, y.detach()[:, :2])",
    "xc.index_fill_(1, j, 9.0)",
    "xc.scatter_(1, k, y.detach())",
    "xc.scatter_add_(1, k, y.detach())",
    "xc.tril_()",
    "xc.triu_(1)",
    "xc.eq_(y.detach())",
    "xc.ne_(0.5)",
    "xc.lt_(y.detach())",
    "xc.ge_(0.0)",
    "xc.addcmul_(y.detach(), v.detach(), value=0.1)",
    "xc.addcdiv_(y.detach(), v.detach(), value=0.1)",
    "xc.lerp_(y.detach(), 0.5)",
    "xc.floor_()",
    "xc.put_(T.tensor([0, 3]), T.tensor([7.0, 8.0], dtype=T.float64))",
    "xc.index_put_((T.tensor([1]), T.tensor([2])), T.tensor([5.0], dtype=T.float64))",
    "xc.t().mul_(2)",
    "xc[0].mul_(10)",
    "xc.narrow(1, 0, 2).zero_()",
    "xc.view(-1)[3:5].fill_(0)",
    "xc.select(0, 1).add_(1)",
]


def _plain(value):
    """A result as NumPy values, tuples and Python scalars (comparable across libraries)."""
    name = type(value).__name__
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        return np.asarray(value.detach().resolve_conj().numpy())
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    if name in ("finfo", "iinfo") or hasattr(value, "eps"):
        return value
    return value


def _assert_same(got, want, where: str) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), (where, got, want)
        for g, w in zip(got, want):
            _assert_same(g, w, where)
        return
    if isinstance(want, np.ndarray):
        got = np.asarray(got)
        assert got.shape == want.shape, (where, got.shape, want.shape)
        assert got.dtype.kind == want.dtype.kind, (where, got.dtype, want.dtype)
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9, err_msg=where)
        else:
            np.testing.assert_array_equal(got, want, err_msg=where)
        return
    if isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-6), (where, got, want)
        return
    assert got == want and type(got) in (type(want), int, bool, float, str) or got == want, (
        where,
        got,
        want,
    )


def _weights(T, shape, seed: int):
    w = np.random.default_rng(seed).standard_normal(shape)
    return T.tensor(w, dtype=T.float64)


def _differentiable(out) -> list:
    outs = out if isinstance(out, tuple) else (out,)
    return (
        [
            o
            for o in outs
            if hasattr(o, "requires_grad") and o.requires_grad and o.is_floating_point()
        ]
        if not isinstance(outs[0], (int, float, str, bool))
        else []
    )


def _run(T, expression: str):
    env = inputs(T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = eval(expression, env)
    grads = None
    diff = _differentiable(out) if isinstance(out, (tuple, T.Tensor)) else []
    if diff:
        loss = sum((o * _weights(T, tuple(o.shape), seed)).sum() for seed, o in enumerate(diff))
        loss.backward()
        grads = tuple(
            env[n].grad.numpy(force=True) if env[n].grad is not None else None for n in GRAD_INPUTS
        )
    return _plain(out), grads


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_expression_matches_torch(expression):
    torch = pytest.importorskip("torch")
    want, want_grads = _run(torch, expression)
    got, got_grads = _run(T_ad, expression)
    if isinstance(want, torch.dtype):
        want, got = str(want), str(got)
    if type(want).__name__ in ("finfo", "iinfo"):
        return  # (compared through their fields in other expressions)
    if isinstance(want, torch.Size):
        want = tuple(want)
        assert isinstance(got, Size) or isinstance(got, tuple), got
        got = tuple(got)
    _assert_same(got, want, expression)
    if got_grads is None and want_grads is not None:
        # torch's piecewise-constant functions (floor, round, sign, ...) give results that
        # require grad with a zero gradient; autodiff's results of them are constants.
        assert all(w is None or not np.any(w) for w in want_grads), expression
        want_grads = None
    assert (got_grads is None) == (want_grads is None), (expression, got_grads, want_grads)
    if want_grads is not None:
        for name, g, w in zip(GRAD_INPUTS, got_grads, want_grads):
            if w is None:
                assert g is None or not np.any(g), (expression, name)
            else:
                assert g is not None, (expression, name)
                np.testing.assert_allclose(
                    g, w, rtol=1e-6, atol=1e-9, err_msg=f"{expression} d/d{name}"
                )


@pytest.mark.parametrize("expression", IN_PLACE)
def test_in_place_matches_torch(expression):
    torch = pytest.importorskip("torch")
    results = []
    for T in (torch, T_ad):
        env = inputs(T)
        out = eval(expression, env)
        results.append((env["xc"].numpy().copy(), env["xc"]._version, out))
    (want, want_version, want_out), (got, got_version, got_out) = results
    np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=expression)
    np.testing.assert_allclose(got_out.numpy(), want_out.numpy(), rtol=1e-12, err_msg=expression)
    if expression.startswith("xc.") and "_(" in expression.split(".")[1]:
        # (a view's in-place update bumps its base's version in torch: views share the
        # counter; autodiff bumps the view's own)
        assert got_version == want_version, expression


# ---------------------------------------------------------------------- without the peer


def test_size_is_an_int_and_torchs_method():
    x = autodiff.zeros(2, 3)
    assert x.size == 6 and isinstance(x.size, int)
    assert x.size() == (2, 3) and type(x.size()) is Size and repr(x.size()) == "torch.Size([2, 3])"
    assert x.size(0) == 2 and x.size(-1) == 3 and x.size(dim=1) == 3
    with pytest.raises(
        IndexError,
        match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)",
    ):
        x.size(2)
    assert autodiff.tensor(1.0).size() == () and autodiff.tensor(1.0).size == 1
    assert pickle.loads(pickle.dumps(x.size())) == (2, 3)
    s = Size([2, 3])
    assert s[1:] == Size([3]) and type(s[1:]) is Size and type(s + (1,)) is Size
    assert f"{s}" == "torch.Size([2, 3])" and s.numel() == 6


def test_numpy_code_reads_size_as_an_int_inside_transforms():
    def f(x):
        n = x.size  # NumPy's meaning: the number of elements
        return autodiff.numpy.sum(x**2) / n

    g = autodiff.grad(f)(np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_allclose(g, np.array([1.0, 2.0, 3.0, 4.0]) / 2)


def test_torch_code_calls_size_inside_functional_transforms():
    def f(x):
        return (x * x).sum() / x.size(0)

    x = autodiff.tensor([1.0, 2.0])
    (g,) = autodiff.autograd.grad(f(x.requires_grad_()), x)
    np.testing.assert_allclose(g.numpy(), [1.0, 2.0])
    jac = autodiff.autograd.functional.jacobian(
        lambda t: t.sum(dim=0) / t.size(0), autodiff.ones(2, 2)
    )
    np.testing.assert_allclose(jac.numpy(), np.stack([np.eye(2), np.eye(2)], 1) / 2)


def test_dtype_constants_are_numpy_dtypes_in_disguise():
    assert autodiff.float64 == np.float64 and autodiff.float == np.float32
    assert np.zeros(2, dtype=autodiff.long).dtype == np.int64
    assert autodiff.zeros(2, dtype=autodiff.half).dtype == np.float16
    assert autodiff.tensor([1.0], dtype=autodiff.float32).dtype == autodiff.float32
    assert {autodiff.float64: "f8"}[np.dtype("float64")] == "f8"
    assert repr(autodiff.float64) == "torch.float64"
    assert pickle.loads(pickle.dumps(autodiff.cfloat)) is autodiff.complex64
    x = autodiff.ones(2)
    assert x.dtype == autodiff.float64 and str(x.dtype) == "torch.float64"  # (torch's dtype)


def test_default_dtype_is_per_thread_and_restorable():
    assert autodiff.get_default_dtype() == autodiff.float64
    autodiff.set_default_dtype(autodiff.float32)
    try:
        assert autodiff.tensor([1.0]).dtype == np.float32 and autodiff.zeros(2).dtype == np.float32
        assert autodiff.randn(2).dtype == np.float32 and autodiff.tensor([1]).dtype == np.int64
        seen = []
        t = threading.Thread(target=lambda: seen.append(autodiff.get_default_dtype()))
        t.start()
        t.join()
        assert seen == [autodiff.float64]
    finally:
        autodiff.set_default_dtype(autodiff.float64)
    with pytest.raises(TypeError, match="floating-point"):
        autodiff.set_default_dtype(autodiff.int64)


def test_manual_seed_reproduces_every_random_factory():
    def draw():
        return [
            autodiff.rand(3).numpy(),
            autodiff.randn(2, 2).numpy(),
            autodiff.randint(0, 10, (4,)).numpy(),
            autodiff.randperm(5).numpy(),
            autodiff.rand_like(autodiff.zeros(2)).numpy(),
            autodiff.zeros(3).normal_().numpy(),
            autodiff.zeros(3).uniform_(-1, 1).numpy(),
        ]

    autodiff.manual_seed(7)
    first = draw()
    autodiff.manual_seed(7)
    second = draw()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert autodiff.initial_seed() == 7
    g = autodiff.Generator().manual_seed(7)
    np.testing.assert_array_equal(autodiff.rand(3, generator=g).numpy(), first[0])


def test_the_generator_is_safe_across_threads():
    autodiff.manual_seed(0)
    out = []

    def work():
        out.append(autodiff.rand(1000).numpy())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    draws = np.concatenate(out)
    assert len(np.unique(draws)) == draws.size  # one stream, no draw given twice


def test_devices_other_than_the_cpu_are_rejected_clearly():
    with pytest.raises(RuntimeError, match="CPU only: device 'cuda'"):
        autodiff.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="CPU only"):
        autodiff.ones(2).to("cuda:0")
    with pytest.raises(RuntimeError, match="CPU only"):
        autodiff.ones(2).cuda()
    assert autodiff.ones(2, device=autodiff.device("cpu")).device == autodiff.device("cpu")
    assert str(autodiff.ones(2).device) == "cpu" and not autodiff.ones(2).is_cuda


def test_save_and_load_tensors_and_dicts(tmp_path):
    w = autodiff.tensor([1.0, 2.0], requires_grad=True)
    state = {"w": w, "b": autodiff.zeros(3), "step": 4, "nested": [autodiff.arange(3)]}
    path = tmp_path / "state.pt"
    autodiff.save(state, path)
    back = autodiff.load(path)
    assert back["step"] == 4 and back["w"].requires_grad and back["w"].is_leaf
    np.testing.assert_array_equal(back["w"].detach().numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(back["nested"][0].numpy(), [0, 1, 2])
    buffer = io.BytesIO()
    autodiff.save(w * 2, buffer)  # a non-leaf saves as a leaf holding its value
    buffer.seek(0)
    loaded = autodiff.load(buffer, map_location="cpu")
    assert loaded.is_leaf and loaded.tolist() == [2.0, 4.0]


def test_keywords_of_both_libraries_and_no_internal_names_in_errors():
    x = autodiff.ones(2, 3)
    assert autodiff.sum(x, axis=1).shape == (2,) and autodiff.sum(x, dim=1).shape == (2,)
    assert x.mean(axis=0, keepdims=True).shape == (1, 3)
    assert autodiff.cat([x, x], axis=1).shape == (2, 6)
    assert autodiff.stack([x, x], axis=2).shape == (2, 3, 2)
    assert x.unsqueeze(axis=0).shape == (1, 2, 3) and x.unsqueeze(dim=1).shape == (2, 1, 3)
    assert x.softmax(axis=1).shape == (2, 3) and x.logsumexp(axis=1, keepdims=True).shape == (2, 1)
    assert x.max(axis=1, keepdims=True).values.shape == (2, 1)
    assert autodiff.median(x, axis=1).values.shape == (2,) and x.count_nonzero(axis=0).shape == (3,)
    assert x.var(axis=0, keepdims=True).shape == (1, 3) and x.cumsum(axis=1).shape == (2, 3)
    with pytest.raises(TypeError, match=r"^sum\(\) got an unexpected keyword argument 'foo'"):
        autodiff.sum(x, foo=1)
    with pytest.raises(TypeError, match="got a value both for axis="):
        autodiff.sum(x, 1, axis=0)


def test_view_needs_a_compatible_layout_as_in_torch():
    x = autodiff.arange(6.0).reshape(2, 3)
    with pytest.raises(RuntimeError, match=r"Use \.reshape\(\.\.\.\) instead"):
        x.t().view(6)
    assert x.t().reshape(6).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    with pytest.raises(RuntimeError, match="invalid for input of size 6"):
        x.view(4, 2)


def test_views_share_memory_with_their_base():
    x = autodiff.zeros(3, 4)
    x.narrow(1, 1, 2).fill_(1.0)
    x.select(0, 2).add_(5.0)
    assert x.sum().item() == 6.0 + 20.0
    assert x[1:].untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert x.storage().data_ptr() == x.view(-1).storage().data_ptr()
    assert x[1].data_ptr() == x.data_ptr() + 4 * 8 and x[1].storage_offset() == 4


def test_as_strided_with_overlapping_windows_differentiates_exactly():
    x = autodiff.arange(5.0, requires_grad=True)
    windows = x.as_strided((3, 3), (1, 1))  # overlapping: element 2 appears three times
    assert windows.tolist() == [[0, 1, 2], [1, 2, 3], [2, 3, 4]]
    windows.sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0, 2.0, 1.0]


def test_max_with_dim_sends_the_gradient_to_one_index_as_torch():
    x = autodiff.tensor([[1.0, 3.0, 3.0]], requires_grad=True)
    values, indices = x.max(1)
    values.sum().backward()
    assert indices.tolist() == [1] and x.grad.tolist() == [[0.0, 1.0, 0.0]]
    x.grad = None
    x.max().backward()  # the full reduction shares it between ties (torch's rule too)
    assert x.grad.tolist() == [[0.0, 0.5, 0.5]]


def test_legacy_constructors_and_type_names():
    assert autodiff.FloatTensor(2, 3).shape == (2, 3)
    assert autodiff.LongTensor([1, 2]).dtype == np.int64
    assert autodiff.ones(2).type() == "torch.DoubleTensor"
    assert autodiff.ones(2).type("torch.FloatTensor").dtype == np.float32
    assert autodiff.ones(2).type(autodiff.LongTensor).dtype == np.int64
    assert isinstance(autodiff.ones(2), autodiff.DoubleTensor)


def test_float_returns_itself_when_nothing_changes():
    x = autodiff.ones(2, dtype=autodiff.float32)
    assert x.float() is x and x.to(autodiff.float32) is x and x.cpu() is x
    assert x.to(autodiff.float32, copy=True) is not x
    assert x.double() is not x and x.double().dtype == np.float64
