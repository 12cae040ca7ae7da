"""The kernel registry: which kernel a functional applies to each type of input.

As in ``torchvision.transforms.v2``, every public functional
(:func:`~trivium.vision.transforms.functional.resize`, ``horizontal_flip``, ...) looks
up the kernel registered for the type of its input, walking the type's MRO:

* a plain tensor goes to the image kernel (``resize_image``), as do
  ``tv_tensors.Image`` and ``Video`` (``resize_video``), which come back typed;
* ``BoundingBoxes`` and ``Mask`` go to their kernels (``resize_bounding_boxes``,
  ``resize_mask``), which read the metadata (``format``, ``canvas_size``) they need;
* a user's own ``TVTensor`` subclass goes to the kernel registered for it with
  :func:`register_kernel`, called with the tv_tensor itself and the functional's
  arguments as keywords. A ``TVTensor`` without a kernel raises ``TypeError`` (a
  functional never falls back to the plain-tensor kernel for it).

Transforms draw their parameters and call the same functionals (see
:meth:`~trivium.vision.transforms.ImageTransform.transform_tv_tensor`), so a kernel
registered here also runs inside ``Resize``, ``RandomHorizontalFlip``, ...

Example: a kernel of ``F.horizontal_flip`` for a new tv_tensor type::

    >>> import torch
    >>> from trivium.vision import tv_tensors
    >>> from trivium.vision.transforms import functional as F
    >>> class Points(tv_tensors.TVTensor):  # [N, 2] (x, y) on a 10-pixel-wide image
    ...     pass
    >>> @register_kernel(F.horizontal_flip, Points)
    ... def _flip_points(points, **kwargs):
    ...     out = points.as_subclass(torch.Tensor).clone()
    ...     out[:, 0] = 10 - out[:, 0]
    ...     return tv_tensors.wrap(out, like=points)
    >>> F.horizontal_flip(torch.tensor([[1.0, 2.0]]).as_subclass(Points)).tolist()
    [[9.0, 2.0]]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from trivium.vision import tv_tensors

__all__ = ["get_kernel", "is_image_type", "register_kernel"]

# functional -> {input type -> kernel}
_KERNEL_REGISTRY: dict[Callable[..., Any], dict[type, Callable[..., Any]]] = {}

# The tv_tensor types of trivium.vision.tv_tensors: their kernels are the library's.
_BUILTIN_TYPES = frozenset(
    obj
    for obj in vars(tv_tensors).values()
    if isinstance(obj, type) and issubclass(obj, tv_tensors.TVTensor)
)


def _wrapped(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """``kernel`` of plain tensors, called on a tv_tensor: unwrapped in, re-typed out."""

    @functools.wraps(kernel)
    def wrapper(inpt: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        # Plain tensors in: a tv_tensor's __torch_function__ costs on every op.
        out = kernel(inpt.as_subclass(torch.Tensor), *args, **kwargs)
        if isinstance(out, (tuple, list)):  # five_crop / ten_crop
            return type(out)(tv_tensors.wrap(o, like=inpt) for o in out)
        return tv_tensors.wrap(out, like=inpt)

    return wrapper


def _register_kernel_internal(
    functional: Callable[..., Any], input_type: type, *, tv_tensor_wrapper: bool = True
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: the library's kernel of ``functional`` for ``input_type``.

    With ``tv_tensor_wrapper`` a kernel for a tv_tensor type gets the plain tensor
    and its result is wrapped like the input; without, it gets the tv_tensor (the box
    kernels, which read ``format`` and ``canvas_size``).
    """
    registry = _KERNEL_REGISTRY.setdefault(functional, {})

    def decorator(kernel: Callable[..., Any]) -> Callable[..., Any]:
        wrap = tv_tensor_wrapper and issubclass(input_type, tv_tensors.TVTensor)
        registry[input_type] = _wrapped(kernel) if wrap else kernel
        return kernel

    return decorator


def _functional_name(functional: Any) -> str:
    return f"F.{getattr(functional, '__name__', repr(functional))}"


def register_kernel(
    functional: Callable[..., Any] | str, tv_tensor_cls: type
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: the kernel ``functional`` applies to inputs of a user's ``tv_tensor_cls``.

    ``functional`` is a functional of :mod:`trivium.vision.transforms.functional` (or
    its name); ``tv_tensor_cls`` a subclass of ``tv_tensors.TVTensor`` defined outside
    the library (the library's own types have their kernels). The kernel is called as
    ``kernel(inpt, **arguments)`` with the tv_tensor itself and the functional's
    arguments by name, and returns the result (``tv_tensors.wrap(out, like=inpt)``
    keeps the type). Transforms calling ``functional`` use it too. Registering a pair
    again replaces the kernel.

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> from trivium.vision.transforms import functional as F
        >>> class Heatmap(tv_tensors.TVTensor):
        ...     pass
        >>> @register_kernel(F.resize, Heatmap)
        ... def _resize_heatmap(heatmap, size, **kwargs):
        ...     out = F.resize(heatmap.as_subclass(torch.Tensor), size, antialias=False)
        ...     return tv_tensors.wrap(out, like=heatmap)
        >>> F.resize(torch.zeros(1, 4, 4).as_subclass(Heatmap), [2, 2]).shape
        torch.Size([1, 2, 2])
    """
    if isinstance(functional, str):
        name = functional
        functional = next((f for f in _KERNEL_REGISTRY if f.__name__ == name), None)
        if functional is None:
            raise ValueError(
                f"register_kernel: {name!r} is not a functional of "
                "trivium.vision.transforms.functional that dispatches on its input"
            )
    if not callable(functional) or functional not in _KERNEL_REGISTRY:
        raise ValueError(
            f"register_kernel: functional must be a functional of "
            f"trivium.vision.transforms.functional that dispatches on its input, got {functional!r}"
        )
    if not (isinstance(tv_tensor_cls, type) and issubclass(tv_tensor_cls, tv_tensors.TVTensor)):
        raise TypeError(
            f"register_kernel: tv_tensor_cls must be a TVTensor subclass, got {tv_tensor_cls!r}"
        )
    if tv_tensor_cls in _BUILTIN_TYPES:
        raise ValueError(
            f"register_kernel: tv_tensor_cls must be a type of your own; "
            f"{tv_tensor_cls.__name__} already has the library's kernels"
        )
    return _register_kernel_internal(functional, tv_tensor_cls, tv_tensor_wrapper=False)


def _passthrough(inpt: Any, *args: Any, **kwargs: Any) -> Any:
    return inpt


def get_kernel(
    functional: Callable[..., Any], input_type: type, *, allow_passthrough: bool = False
) -> Callable[..., Any]:
    """The kernel of ``functional`` for ``input_type`` (the nearest type of its MRO).

    A ``TVTensor`` type never reaches the plain-tensor kernel. With no kernel:
    a kernel returning its input when ``allow_passthrough``, else ``TypeError``.

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> from trivium.vision.transforms import functional as F
        >>> get_kernel(F.resize, torch.Tensor).__name__
        'resize_image'
        >>> get_kernel(F.adjust_hue, tv_tensors.Mask)
        Traceback (most recent call last):
        ...
        TypeError: F.adjust_hue has no kernel for Mask: ...
    """
    registry = _KERNEL_REGISTRY.get(functional)
    if registry is None:
        raise ValueError(f"{_functional_name(functional)} has no registered kernels")
    kernel = registry.get(input_type)
    if kernel is not None:
        return kernel
    for cls in input_type.__mro__:
        if cls in registry:
            return registry[cls]
        if cls is tv_tensors.TVTensor:
            break  # a tv_tensor of a new type is not a plain image
    if allow_passthrough:
        return _passthrough
    supported = ", ".join(sorted(t.__name__ for t in registry))
    raise TypeError(
        f"{_functional_name(functional)} has no kernel for {input_type.__name__}: it takes "
        f"{supported}. Register one with trivium.vision.transforms.register_kernel"
    )


def is_image_type(inpt: Any) -> bool:
    """Whether ``inpt`` is a typed image or video (``tv_tensors.Image`` / ``Video``).

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> is_image_type(tv_tensors.Image(torch.zeros(3, 2, 2))), is_image_type(torch.zeros(3))
        (True, False)
    """
    return isinstance(inpt, (tv_tensors.Image, tv_tensors.Video))
