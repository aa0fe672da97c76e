"""torch.testing._internal.common_dtype's dtype lists, over autodiff's dtypes."""

import autodiff as torch


def floating_types():
    return (torch.float32, torch.float64)


def floating_types_and(*extra):
    return floating_types() + tuple(extra)


def floating_and_complex_types():
    return floating_types() + (torch.complex64, torch.complex128)


def floating_and_complex_types_and(*extra):
    return floating_and_complex_types() + tuple(extra)


def all_types_and(*extra):
    return floating_types() + (torch.int8, torch.int16, torch.int32, torch.int64) + extra
