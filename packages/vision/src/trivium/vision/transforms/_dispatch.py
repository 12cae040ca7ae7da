"""The kernel registry: which function a transform applies to each type of input.

Every transform's ``forward`` (:class:`~trivium.vision.transforms.ImageTransform`)
flattens the sample and hands each leaf to :func:`apply_kernel`, which picks by the
leaf's type, as ``torchvision.transforms.v2`` does:

* images (plain tensors ``[..., C, H, W]``, ``tv_tensors.Image``/``Video``, PIL
  images) go to the transform's ``transform`` method, the image kernel;
* other tv_tensors (``BoundingBoxes``, ``Mask``, or a new ``TVTensor`` subclass) go
  to the kernel registered for the pair (transform class, input type) with
  :func:`register_kernel`; the transform's base classes and the input's base
  classes are searched too. A transform without one raises a ``TypeError``: boxes
  a geometry transform left unmoved would be silently wrong. Transforms that leave
  geometry alone (the colour ones) register :func:`passthrough`;
* everything else (labels, strings, 1-D/2-D plain tensors) passes through.

A kernel registered for a transform class is called as ``kernel(transform, inpt,
params)`` with the params ``make_params`` drew for the sample, and returns the
transformed input, keeping its type (``tv_tensors.wrap``). The registry also holds
kernels keyed by a functional: :func:`get_kernel` finds them the same way.

Example: a box kernel for a new transform, registered next to it::

    >>> import torch
    >>> from trivium.vision import tv_tensors
    >>> from trivium.vision.transforms import ImageTransform
    >>> class ShiftRight(ImageTransform):
    ...     def transform(self, inpt, params):
    ...         return torch.roll(inpt, 1, dims=-1)
    >>> @register_kernel(ShiftRight, tv_tensors.BoundingBoxes)
    ... def _shift_right_boxes(transform, boxes, params):
    ...     out = boxes.as_subclass(torch.Tensor) + torch.tensor([1, 0, 1, 0])
    ...     return tv_tensors.wrap(out, like=boxes)
    >>> boxes = tv_tensors.BoundingBoxes([[0, 0, 2, 2]], format="XYXY", canvas_size=(4, 4))
    >>> img, target = ShiftRight()(torch.zeros(3, 4, 4), {"boxes": boxes, "labels": [1]})
    >>> target["boxes"].tolist(), target["labels"]
    ([[1, 0, 3, 2]], [1])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trivium.vision import tv_tensors

__all__ = ["get_kernel", "is_image_type", "passthrough", "register_kernel", "register_passthrough"]

# (transform class or functional, input type) -> kernel.
_KERNELS: dict[tuple[Any, type], Callable[..., Any]] = {}


def register_kernel(owner: Any, input_type: type) -> Callable[[Callable], Callable]:
    """Decorator: register the kernel ``owner`` applies to inputs of ``input_type``.

    ``owner`` is a transform class (the kernel is called as ``kernel(transform,
    inpt, params)``) or a functional (called as the functional is). Registering a
    pair twice replaces the kernel.

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> class Noop(torch.nn.Module):
        ...     pass
        >>> @register_kernel(Noop, tv_tensors.Mask)
        ... def _noop_mask(transform, mask, params):
        ...     return mask
        >>> get_kernel(Noop, tv_tensors.Mask) is _noop_mask
        True
    """
    if not isinstance(input_type, type) or not issubclass(input_type, tv_tensors.TVTensor):
        raise TypeError(
            f"register_kernel: input_type must be a TVTensor subclass, got {input_type!r}"
        )
    if not callable(owner):
        raise TypeError(
            f"register_kernel: owner must be a transform class or a function, got {owner!r}"
        )

    def decorator(kernel: Callable) -> Callable:
        _KERNELS[(owner, input_type)] = kernel
        return kernel

    return decorator


def passthrough(transform: Any, inpt: Any, params: dict[str, Any]) -> Any:
    """The kernel of a transform that leaves an input as it is (e.g. boxes under a colour change).

    Example:
        >>> passthrough(None, "boxes", {})
        'boxes'
    """
    return inpt


def register_passthrough(owners: tuple[Any, ...], input_types: tuple[type, ...]) -> None:
    """Register :func:`passthrough` for every pair of ``owners`` and ``input_types``.

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> class Tint(torch.nn.Module):
        ...     pass
        >>> register_passthrough((Tint,), (tv_tensors.BoundingBoxes, tv_tensors.Mask))
        >>> get_kernel(Tint, tv_tensors.Mask) is passthrough
        True
    """
    for owner in owners:
        for input_type in input_types:
            register_kernel(owner, input_type)(passthrough)


def get_kernel(owner: Any, input_type: type) -> Callable[..., Any] | None:
    """The kernel registered for ``owner`` and ``input_type`` or their base classes, or None.

    The most derived owner wins, then the most derived input type.

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> class Blur(torch.nn.Module):
        ...     pass
        >>> class StrongBlur(Blur):
        ...     pass
        >>> register_passthrough((Blur,), (tv_tensors.TVTensor,))
        >>> get_kernel(StrongBlur, tv_tensors.BoundingBoxes) is passthrough
        True
        >>> get_kernel(torch.nn.Module, tv_tensors.Mask) is None
        True
    """
    owners = owner.__mro__ if isinstance(owner, type) else (owner,)
    types = [t for t in input_type.__mro__ if issubclass(t, tv_tensors.TVTensor)]
    for o in owners:
        for t in types:
            kernel = _KERNELS.get((o, t))
            if kernel is not None:
                return kernel
    return None


def is_image_type(inpt: Any) -> bool:
    """Whether ``inpt`` is a typed image or video (``tv_tensors.Image`` / ``Video``).

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> is_image_type(tv_tensors.Image(torch.zeros(3, 2, 2))), is_image_type(torch.zeros(3))
        (True, False)
    """
    return isinstance(inpt, (tv_tensors.Image, tv_tensors.Video))


def apply_kernel(transform: Any, inpt: Any, params: dict[str, Any]) -> Any:
    """Apply ``transform``'s kernel for the tv_tensor ``inpt`` (not an image), or raise.

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> mask = tv_tensors.Mask(torch.zeros(2, 2))
        >>> apply_kernel(torch.nn.Identity(), mask, {})
        Traceback (most recent call last):
        ...
        TypeError: Identity has no kernel for Mask: ...
    """
    kernel = get_kernel(type(transform), type(inpt))
    if kernel is None:
        raise TypeError(
            f"{type(transform).__name__} has no kernel for {type(inpt).__name__}: it would "
            f"leave the {type(inpt).__name__} unchanged while the image changes. Register one "
            f"with trivium.vision.transforms.register_kernel, or drop it from the sample"
        )
    return kernel(transform, inpt, params)
