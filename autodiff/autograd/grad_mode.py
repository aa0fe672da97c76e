"""Grad modes: thread-local switches for level-0 graph recording (and, in inference mode,
forward-AD tangents). Each is a context manager and a decorator, as in torch."""

from __future__ import annotations

import contextlib
import functools
import inspect
import warnings

from autodiff.autograd._state import autograd_state
from autodiff.core.trace import state


class _ModeContext(contextlib.ContextDecorator):
    """Base for the mode context managers: also usable as a bare decorator (`@no_grad`)."""

    def __new__(cls, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs and cls._bare_decorator:
            return cls()(args[0])
        return super().__new__(cls)

    _bare_decorator = True

    def clone(self):
        return self.__class__()

    def __call__(self, func):
        if inspect.isclass(func):
            # As torch: deprecated, and what runs in the mode is the class's construction.
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. You "
                "should only decorate functions or methods. To preserve the current behavior of "
                "class decoration, you can directly decorate the `__init__` method and nothing "
                "else.",
                FutureWarning,
                stacklevel=2,
            )
            cls = func

            def func(*args, **kwargs):
                return cls(*args, **kwargs)

        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, func):
        """As torch does, run each step of a decorated generator inside the mode (not the
        caller's code between steps, and not just the generator's creation)."""

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:
                        with self.clone():
                            response = gen.throw(exc)
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value

        return wrapper


class no_grad(_ModeContext):
    """Do not record operations on Tensors (forward AD is unaffected).

    Example:
        >>> import autodiff as ad
        >>> x = ad.tensor([1.0], requires_grad=True)
        >>> with no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
    """

    def __enter__(self):
        st = state()
        self.prev = st.grad_enabled
        st.grad_enabled = False

    def __exit__(self, *exc):
        state().grad_enabled = self.prev
        return False


class enable_grad(_ModeContext):
    """Record operations again inside a `no_grad` block.

    Example:
        >>> import autodiff as ad
        >>> x = ad.tensor([1.0], requires_grad=True)
        >>> with ad.no_grad():
        ...     with enable_grad():
        ...         y = x * 2
        >>> y.requires_grad
        True
    """

    def __enter__(self):
        st = state()
        self.prev = st.grad_enabled
        st.grad_enabled = True

    def __exit__(self, *exc):
        state().grad_enabled = self.prev
        return False


class set_grad_enabled(_ModeContext):
    """Set grad mode to `mode` now (as a function) or for a block (as a context manager).

    Example:
        >>> import autodiff as ad
        >>> x = ad.tensor([1.0], requires_grad=True)
        >>> with set_grad_enabled(False):
        ...     y = x * 2
        >>> y.requires_grad, is_grad_enabled()
        (False, True)
    """

    _bare_decorator = False

    def __init__(self, mode: bool):
        st = state()
        self.prev = st.grad_enabled
        self.mode = bool(mode)
        st.grad_enabled = self.mode

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, func):
        # Used as a decorator, `set_grad_enabled(mode)` must not change the mode of the
        # decorating code: undo what __init__ did (as torch does).
        state().grad_enabled = self.prev
        return super().__call__(func)

    def __enter__(self):
        state().grad_enabled = self.mode

    def __exit__(self, *exc):
        state().grad_enabled = self.prev
        return False


class inference_mode(_ModeContext):
    """Like `no_grad`, and dual levels carry no tangents either (mode=False: no effect).

    Example:
        >>> import autodiff as ad
        >>> x = ad.tensor([1.0], requires_grad=True)
        >>> with inference_mode():
        ...     y = x * 2
        ...     print(is_inference_mode_enabled())
        True
        >>> y.requires_grad, is_inference_mode_enabled()
        (False, False)
    """

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def clone(self):
        return self.__class__(self.mode)

    def __enter__(self):
        st = state()
        self.prev = (st.grad_enabled, st.fw_grad_enabled)
        if self.mode:
            st.grad_enabled = False
            st.fw_grad_enabled = False

    def __exit__(self, *exc):
        st = state()
        st.grad_enabled, st.fw_grad_enabled = self.prev
        return False


class set_multithreading_enabled(_ModeContext):
    """torch's switch for running backward passes on worker threads. autodiff's engine runs
    each pass on the calling thread either way; the mode is recorded (what
    `torch._C._is_multithreading_enabled` reads, and what
    `_current_graph_task_execution_order` requires off). Like `set_grad_enabled`, it takes
    effect at once, and as a context manager restores the mode.

    Example:
        >>> import autodiff as ad
        >>> x = ad.tensor([1.0, 2.0], requires_grad=True)
        >>> with set_multithreading_enabled(False):
        ...     (x * x).sum().backward()
        >>> x.grad
        tensor([2., 4.])
    """

    _bare_decorator = False

    def __init__(self, mode: bool):
        st = autograd_state()
        self.prev = st.multithreading
        self.mode = bool(mode)
        st.multithreading = self.mode

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, func):
        autograd_state().multithreading = self.prev
        return super().__call__(func)

    def __enter__(self):
        autograd_state().multithreading = self.mode

    def __exit__(self, *exc):
        autograd_state().multithreading = self.prev
        return False


class _force_original_view_tracking(_ModeContext):
    """torch's switch between replaying views and `as_strided` in the backward of in-place
    operations on views, for code that sets it: autodiff's views never take the `as_strided`
    path, so the switch only records the mode (`is_view_replay_enabled`). Like
    `set_grad_enabled`, it takes effect at once, and as a context manager restores the mode.

    Example:
        >>> with _force_original_view_tracking(True):
        ...     print(is_view_replay_enabled())
        True
        >>> is_view_replay_enabled()
        False
    """

    _bare_decorator = False

    def __init__(self, mode: bool):
        st = autograd_state()
        self.prev = st.view_replay
        self.mode = bool(mode)
        st.view_replay = self.mode

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, func):
        autograd_state().view_replay = self.prev
        return super().__call__(func)

    def __enter__(self):
        autograd_state().view_replay = self.mode

    def __exit__(self, *exc):
        autograd_state().view_replay = self.prev
        return False


def is_view_replay_enabled() -> bool:
    """The mode `_force_original_view_tracking` set (False by default).

    Example:
        >>> is_view_replay_enabled()
        False
    """
    return autograd_state().view_replay


def is_grad_enabled() -> bool:
    """Whether operations on Tensors are being recorded in this thread.

    Example:
        >>> import autodiff as ad
        >>> with ad.no_grad():
        ...     print(is_grad_enabled())
        False
        >>> is_grad_enabled()
        True
    """
    return state().grad_enabled


def is_inference_mode_enabled() -> bool:
    """Whether an `inference_mode` block is active in this thread.

    Example:
        >>> import autodiff as ad
        >>> with ad.inference_mode():
        ...     print(is_inference_mode_enabled())
        True
        >>> is_inference_mode_enabled()
        False
    """
    return not state().fw_grad_enabled
