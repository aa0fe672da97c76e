"""autodiff.torch: the torch face, everything `import autodiff as torch` reads as torch.

The top-level `autodiff` namespace re-exports the torch names (`autodiff.tanh`,
`autodiff.float32`, `autodiff.cat`, ...); this package is where they are written:

    dtypes          torch's dtypes, the default dtype, promotion, finfo/iinfo
    types           device, return_types, storages, memory formats, cuda/mps/xpu/backends
    generator       Generator, the default generator, seeding, the RNG state
    _args           argument adapters (dims, keyword aliases, dtypes, `out=`, in-place)
    creation        the factories (`tensor`, `zeros`, ...), `Tensor.new_*`, legacy tensor types
    indexing        index_select, gather, scatter, index_*, masked_*, nonzero, take, ...
    pointwise       arithmetic, elementwise math, comparisons, complex numbers
    predicates      is_tensor, is_floating_point, numel, allclose, equal, is_conj, ...
    reductions      reductions, statistics, softmaxes, cumulative functions, norms, sorting
    views           view, reshape, expand, narrow, split, squeeze, permute, transpose, ...
    joining         cat, stack, flip, roll, tril, repeat_interleave, diag, broadcast_*, ...
    linalg          products and linear algebra
    conversions     Tensor's conversions and metadata: to, type, cpu, dim, stride, storages
    random          random factories and Tensor's random fills
    inplace         Tensor's in-place arithmetic and fills
    serialization   save, load
    faces           the methods whose meanings differ between NumPy and torch: dispatchers
    _node_names     torch's names of the nodes and which primitives return views
    _tensor_methods Tensor's method table, installed at `import autodiff`
    _aliases        the old import paths (`autodiff.nn` is `autodiff.torch.nn`)
    nn, optim, utils, _C    torch.nn, torch.optim, torch.utils, torch._C (loaded on first use)

Layers (tests/test_layers.py): the function modules sit with the NumPy namespace, on `ops`;
`nn`, `optim`, `utils` and `_C` build on `autodiff.autograd`; `_tensor_methods` on all of
them. So this `__init__` imports nothing: importing any module of the package runs it.

The packages keep their old paths as the same module objects (`autodiff.nn.functional is
autodiff.torch.nn.functional`): a finder resolves `autodiff.nn`, `autodiff.optim`,
`autodiff.utils`, `autodiff._C` and their submodules to the modules here, on first use
(`_aliases.py` says why a finder).
"""
