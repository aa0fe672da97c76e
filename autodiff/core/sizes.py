"""torch's `Size` and `ElementCount`, the int `x.size` is on the torch face.

NumPy's `x.size` is the number of elements; torch's `x.size` is a method (`x.size()` is a
`torch.Size`, `x.size(d)` the length of dimension `d`). On the torch face, `Tensor.size`
(core/tensor.py) is an `ElementCount`: an int equal to the number of elements that torch
code can call. (On the NumPy face it is a plain int: NumPy treats an int subclass as a
strong int64 in arithmetic, a Python int as a weakly typed number.)
"""

from __future__ import annotations

import math
import operator


class Size(tuple):
    """`torch.Size`: the shape `x.size()` returns, a tuple printed as torch prints it.

    Example:
        >>> Size([2, 3]), Size([2, 3]) == (2, 3), Size([2, 3])[1:], Size([2, 3]).numel()
        (torch.Size([2, 3]), True, torch.Size([3]), 6)
    """

    __slots__ = ()

    def __new__(cls, sizes=()) -> Size:
        return tuple.__new__(cls, [operator.index(n) for n in sizes])

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    __str__ = __repr__

    def __getitem__(self, index):
        item = tuple.__getitem__(self, index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other) -> Size:
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other) -> Size:
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n) -> Size:
        return Size(tuple(self) * n)

    __rmul__ = __mul__

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        return math.prod(self)

    def __reduce__(self):
        return (Size, (tuple(self),))


class ElementCount(int):
    """`x.size`: an int (NumPy's number of elements) that is also torch's `x.size` method.

    One name, two faces, no clash: NumPy code reads `x.size`, torch code calls it.

    Example:
        >>> import autodiff as ad
        >>> x = ad.zeros(2, 3)
        >>> x.size, x.size(), x.size(-1), x.size(dim=0)
        (6, torch.Size([2, 3]), 3, 2)
    """

    _dims: tuple[int, ...]  # (in the instance's __dict__: an int subclass has no slots)

    def __call__(self, dim: int | None = None):
        shape = self._dims
        if dim is None:
            return Size(shape)
        n = len(shape)
        d = operator.index(dim)
        if not -max(n, 1) <= d < max(n, 1):
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-max(n, 1)}, "
                f"{max(n, 1) - 1}], but got {d})"
            )
        return shape[d] if n else 1

    def __reduce__(self):
        return (int, (int(self),))


# One ElementCount per shape (they are immutable): `x.size` costs a dict lookup.
_COUNTS: dict[tuple, ElementCount] = {}


def _element_count(shape: tuple) -> ElementCount:
    count = ElementCount(math.prod(shape))  # exact Python int; np.prod costs ~3 us
    count._dims = shape
    if len(_COUNTS) >= 4096:
        _COUNTS.clear()
    _COUNTS[shape] = count
    return count


__all__ = ["ElementCount", "Size"]
