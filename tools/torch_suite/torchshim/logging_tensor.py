"""torch.testing._internal.logging_tensor: a `__torch_dispatch__` subclass, out of scope.

The runner scores a test's LoggingTensor variant by its plain variant (as the earlier
measurements did); constructing one here raises OutOfScope.
"""

import contextlib

from torchshim.stand_ins import OutOfScope, _Unavailable

LoggingTensor = _Unavailable("torch_dispatch", "LoggingTensor")
LoggingTensorMode = _Unavailable("torch_dispatch", "LoggingTensorMode")
LoggingTensorReentrant = _Unavailable("torch_dispatch", "LoggingTensorReentrant")
log_input = _Unavailable("torch_dispatch", "log_input")


@contextlib.contextmanager
def capture_logs(*args, **kwargs):
    raise OutOfScope("torch_dispatch", "capture_logs")
    yield
