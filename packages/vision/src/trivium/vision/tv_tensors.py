"""Typed tensors for detection samples: images, videos, masks, boxes and key points.

The same names and semantics as ``torchvision.tv_tensors``: each is a
``torch.Tensor`` subclass whose type tells a transform how to treat it (an image
is resampled, boxes are moved, a mask is resampled with nearest-neighbour
interpolation). Torch operations on them return plain tensors, except
``.clone()``, ``.to()``, ``.detach()``, ``.requires_grad_()`` and ``.pin_memory()``,
which keep the type and metadata; :func:`set_return_type` changes that, and
:func:`wrap` puts a plain tensor back into the type of another one. They pickle
(metadata included), so they cross DataLoader worker processes.

Example:
    >>> import torch
    >>> boxes = BoundingBoxes([[0, 0, 10, 20]], format="XYXY", canvas_size=(32, 32))
    >>> boxes.format, boxes.canvas_size
    (<BoundingBoxFormat.XYXY: 'XYXY'>, (32, 32))
    >>> type(boxes + 1).__name__, type(boxes.clone()).__name__
    ('Tensor', 'BoundingBoxes')
    >>> moved = wrap(boxes + 1, like=boxes)
    >>> type(moved).__name__, moved.tolist()
    ('BoundingBoxes', [[1, 1, 11, 21]])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Any, Self, TypeVar

import torch
from torch._C import DisableTorchFunctionSubclass
from torch.utils._pytree import tree_flatten

__all__ = [
    "BoundingBoxFormat",
    "BoundingBoxes",
    "Image",
    "KeyPoints",
    "Mask",
    "TVTensor",
    "Video",
    "is_rotated_bounding_format",
    "set_return_type",
    "wrap",
]

_T = TypeVar("_T", bound="TVTensor")

# Whether torch ops on a TVTensor return the subclass (set_return_type("TVTensor")).
_RETURN_SUBCLASS = False

# Ops that always keep the subclass and its metadata.
_KEEP_SUBCLASS = {
    torch.Tensor.clone,
    torch.Tensor.to,
    torch.Tensor.detach,
    torch.Tensor.requires_grad_,
    torch.Tensor.pin_memory,
}


class _ReturnType:
    """Restores the previous return type when used as a context manager."""

    def __init__(self, previous: bool) -> None:
        self.previous = previous

    def __enter__(self) -> _ReturnType:
        return self

    def __exit__(self, *exc: Any) -> None:
        global _RETURN_SUBCLASS
        _RETURN_SUBCLASS = self.previous


def set_return_type(return_type: str) -> _ReturnType:
    """Whether torch ops on tv_tensors return plain tensors ("Tensor") or tv_tensors ("TVTensor").

    Works globally, or as a context manager that restores the previous setting.
    Transforms always return the type they were given, whatever this says.

    Example:
        >>> import torch
        >>> img = Image(torch.zeros(3, 2, 2))
        >>> with set_return_type("TVTensor"):
        ...     type(img + 1).__name__
        'Image'
        >>> type(img + 1).__name__
        'Tensor'
    """
    global _RETURN_SUBCLASS
    if not isinstance(return_type, str) or return_type.lower() not in ("tensor", "tvtensor"):
        raise ValueError(f"return_type must be 'TVTensor' or 'Tensor', got {return_type!r}")
    previous = _RETURN_SUBCLASS
    _RETURN_SUBCLASS = return_type.lower() == "tvtensor"
    return _ReturnType(previous)


class TVTensor(torch.Tensor):
    """Base class of the typed tensors; subclass it to define a new type for transforms.

    Example:
        >>> import torch
        >>> class Heatmap(TVTensor):
        ...     pass
        >>> h = torch.zeros(2, 2).as_subclass(Heatmap)
        >>> type(h.clone()).__name__, type(h * 2).__name__
        ('Heatmap', 'Tensor')
    """

    @staticmethod
    def _to_tensor(
        data: Any,
        dtype: torch.dtype | None = None,
        device: torch.device | str | int | None = None,
        requires_grad: bool | None = None,
    ) -> torch.Tensor:
        if requires_grad is None:
            requires_grad = data.requires_grad if isinstance(data, torch.Tensor) else False
        return torch.as_tensor(data, dtype=dtype, device=device).requires_grad_(requires_grad)

    @classmethod
    def _wrap_output(
        cls, output: Any, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None
    ) -> Any:
        if isinstance(output, torch.Tensor) and not isinstance(output, cls):
            output = output.as_subclass(cls)
        if isinstance(output, (tuple, list)):
            output = type(output)(cls._wrap_output(part, args, kwargs) for part in output)
        return output

    @classmethod
    def wrap(cls: type[_T], tensor: torch.Tensor, like: _T, **kwargs: Any) -> _T:
        """``tensor`` as this type, with the metadata of ``like`` (overridden by ``kwargs``).

        Example:
            >>> import torch
            >>> type(Image.wrap(torch.zeros(3, 1, 1), like=Image(torch.ones(3, 1, 1)))).__name__
            'Image'
        """
        return tensor.as_subclass(cls)

    @classmethod
    def __torch_function__(
        cls,
        func: Callable[..., Any],
        types: tuple[type, ...],
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        if not all(issubclass(cls, t) for t in types):
            return NotImplemented
        with DisableTorchFunctionSubclass():
            output = func(*args, **(kwargs or {}))
        # The isinstance check keeps `plain.to(image)` a plain tensor.
        if _RETURN_SUBCLASS or (func in _KEEP_SUBCLASS and isinstance(args[0], cls)):
            return cls._wrap_output(output, args, kwargs)
        if isinstance(output, cls):  # in-place ops ignore DisableTorchFunctionSubclass
            return output.as_subclass(torch.Tensor)
        return output

    # Read without a round trip through __torch_function__.
    @property
    def shape(self) -> torch.Size:  # type: ignore[override]
        with DisableTorchFunctionSubclass():
            return super().shape

    @property
    def ndim(self) -> int:  # type: ignore[override]
        with DisableTorchFunctionSubclass():
            return super().ndim

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        with DisableTorchFunctionSubclass():
            return super().device

    @property
    def dtype(self) -> torch.dtype:  # type: ignore[override]
        with DisableTorchFunctionSubclass():
            return super().dtype

    def __deepcopy__(self: _T, memo: dict[int, Any]) -> _T:
        # clone() records autograd history, deepcopy must not; detach drops requires_grad.
        return self.detach().clone().requires_grad_(self.requires_grad)  # type: ignore[return-value]

    def _make_repr(self, **kwargs: Any) -> str:
        extra = ", ".join(f"{key}={value}" for key, value in kwargs.items())
        text = super().__repr__()
        return f"{text[:-1]}, {extra})" if extra else text


def _from_pil_or_data(data: Any) -> Any:
    # Imported here: the transforms import this module.
    from trivium.vision.transforms._image import is_pil, pil_to_tensor

    return pil_to_tensor(data) if is_pil(data) else data


class _DataTensor(TVTensor):
    """A TVTensor made from ``data`` alone (no metadata): Image, Video and Mask."""

    _reads_pil = True  # data may be a PIL image

    def __new__(
        cls,
        data: Any,
        *,
        dtype: torch.dtype | None = None,
        device: torch.device | str | int | None = None,
        requires_grad: bool | None = None,
    ) -> Self:
        if cls._reads_pil:
            data = _from_pil_or_data(data)
        return cls._checked(cls._to_tensor(data, dtype, device, requires_grad)).as_subclass(cls)

    @classmethod
    def _checked(cls, tensor: torch.Tensor) -> torch.Tensor:
        # The tensor in the type's layout, or a ValueError naming the type.
        return tensor


class Image(_DataTensor):
    """An image (or a batch of them) ``[..., C, H, W]``; a 2-D input gets one channel.

    ``data`` is anything ``torch.as_tensor`` takes, or a PIL image.

    Example:
        >>> import torch
        >>> Image(torch.zeros(4, 5)).shape
        torch.Size([1, 4, 5])
    """

    @classmethod
    def _checked(cls, tensor: torch.Tensor) -> torch.Tensor:
        if tensor.ndim < 2:
            raise ValueError(
                f"Image: expected a tensor with 2 or more dimensions, got {tensor.ndim}"
            )
        return tensor.unsqueeze(0) if tensor.ndim == 2 else tensor


class Video(_DataTensor):
    """A video (or a batch of them) ``[..., T, C, H, W]``.

    Example:
        >>> import torch
        >>> Video(torch.zeros(2, 3, 4, 4)).shape
        torch.Size([2, 3, 4, 4])
    """

    _reads_pil = False

    @classmethod
    def _checked(cls, tensor: torch.Tensor) -> torch.Tensor:
        if tensor.ndim < 4:
            raise ValueError(f"Video: expected a tensor [..., T, C, H, W], got {tensor.ndim} dims")
        return tensor


class Mask(_DataTensor):
    """Segmentation or detection masks ``[..., H, W]`` (e.g. one ``[N, H, W]`` per box).

    ``data`` is anything ``torch.as_tensor`` takes, or a PIL image.

    Example:
        >>> import torch
        >>> Mask(torch.zeros(2, 4, 4, dtype=torch.bool)).dtype
        torch.bool
    """


class BoundingBoxFormat(Enum):
    """How the numbers of a box are laid out (4 for an axis-aligned box, 5 or 8 rotated).

    * ``XYXY``: top-left corner x1, y1 and bottom-right corner x2, y2;
    * ``XYWH``: top-left corner x1, y1, width and height;
    * ``CXCYWH``: centre cx, cy, width and height;
    * ``XYWHR``: rotated: first corner x1, y1, width, height and the angle r in
      degrees, counter-clockwise about that corner (as torchvision);
    * ``CXCYWHR``: rotated: centre cx, cy, width, height and the angle r in degrees;
    * ``XYXYXYXY``: rotated: the 4 corners x1, y1 .. x4, y4 (top-left, top-right,
      bottom-right, bottom-left before the rotation).

    Example:
        >>> BoundingBoxFormat["xywh".upper()]
        <BoundingBoxFormat.XYWH: 'XYWH'>
    """

    XYXY = "XYXY"
    XYWH = "XYWH"
    CXCYWH = "CXCYWH"
    XYWHR = "XYWHR"
    CXCYWHR = "CXCYWHR"
    XYXYXYXY = "XYXYXYXY"


_ROTATED_FORMATS = ("XYWHR", "CXCYWHR", "XYXYXYXY")


def is_rotated_bounding_format(format: BoundingBoxFormat | str) -> bool:
    """Whether ``format`` (a ``BoundingBoxFormat`` or its name) is a rotated box format.

    Example:
        >>> is_rotated_bounding_format(BoundingBoxFormat.CXCYWHR)
        True
        >>> is_rotated_bounding_format("XYXY")
        False
    """
    if isinstance(format, BoundingBoxFormat):
        return format.value in _ROTATED_FORMATS
    if isinstance(format, str):
        return format in _ROTATED_FORMATS
    raise ValueError(f"format must be a str or BoundingBoxFormat, got {type(format).__name__}")


def _box_size(format: BoundingBoxFormat) -> int:
    """How many numbers a box of ``format`` has: 4, 5 (``XYWHR``, ``CXCYWHR``) or 8."""
    if format == BoundingBoxFormat.XYXYXYXY:
        return 8
    return 5 if is_rotated_bounding_format(format) else 4


def _as_format(format: BoundingBoxFormat | str) -> BoundingBoxFormat:
    if isinstance(format, BoundingBoxFormat):
        return format
    if isinstance(format, str) and format.upper() in BoundingBoxFormat.__members__:
        return BoundingBoxFormat[format.upper()]
    names = ", ".join(BoundingBoxFormat.__members__)
    raise ValueError(f"BoundingBoxes: format must be one of {names}, got {format!r}")


def _as_canvas_size(canvas_size: Any) -> tuple[int, int]:
    if (
        not isinstance(canvas_size, Sequence)
        or len(canvas_size) != 2
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in canvas_size)
    ):
        raise TypeError(f"canvas_size must be (height, width) as two ints, got {canvas_size!r}")
    return (int(canvas_size[0]), int(canvas_size[1]))


_CLAMPING_MODES = ("soft", "hard", None)


class BoundingBoxes(TVTensor):
    """Boxes ``[N, K]`` on an image of ``canvas_size`` (height, width), laid out as ``format``.

    ``K`` is 4 for the axis-aligned formats, 5 for ``XYWHR``/``CXCYWHR`` and 8 for
    ``XYXYXYXY`` (rotated boxes, floating point only). A 1-D input is one box.
    ``clamping_mode`` ("soft", "hard" or None) says how transforms clamp the boxes to
    the canvas: for rotated boxes "soft" keeps the smallest box of the same angle
    holding the part inside the canvas, "hard" the largest inside it ("soft" and
    "hard" are the same for axis-aligned boxes); None never clamps. One
    ``BoundingBoxes`` per sample holds all its boxes.

    Example:
        >>> b = BoundingBoxes([5, 5, 10, 10], format=BoundingBoxFormat.XYWH, canvas_size=(20, 30))
        >>> b.shape, b.format.value, b.canvas_size
        (torch.Size([1, 4]), 'XYWH', (20, 30))
    """

    format: BoundingBoxFormat
    canvas_size: tuple[int, int]
    clamping_mode: str | None

    @classmethod
    def _wrap(
        cls,
        tensor: torch.Tensor,
        *,
        format: BoundingBoxFormat | str,
        canvas_size: tuple[int, int],
        clamping_mode: str | None = "soft",
        check_dims: bool = True,
    ) -> BoundingBoxes:
        if check_dims:
            if tensor.ndim == 1:
                tensor = tensor.unsqueeze(0)
            elif tensor.ndim != 2:
                raise ValueError(
                    f"BoundingBoxes: expected a 1-D or 2-D tensor, got {tensor.ndim}-D"
                )
            size = _box_size(_as_format(format))
            if tensor.shape[-1] != size:
                raise ValueError(
                    f"BoundingBoxes: expected {size} numbers per {_as_format(format).value} box, "
                    f"got shape {tuple(tensor.shape)}"
                )
        if clamping_mode not in _CLAMPING_MODES:
            raise ValueError(
                f"BoundingBoxes: clamping_mode must be soft, hard or None, got {clamping_mode!r}"
            )
        boxes = tensor.as_subclass(cls)
        boxes.format = _as_format(format)
        boxes.canvas_size = _as_canvas_size(canvas_size)
        boxes.clamping_mode = clamping_mode
        return boxes

    @classmethod
    def wrap(  # type: ignore[override]
        cls, tensor: torch.Tensor, like: BoundingBoxes, **kwargs: Any
    ) -> BoundingBoxes:
        """``tensor`` as boxes with the metadata of ``like``; ``kwargs`` override it.

        Example:
            >>> import torch
            >>> b = BoundingBoxes([[0, 0, 1, 1]], format="XYXY", canvas_size=(4, 4))
            >>> BoundingBoxes.wrap(torch.ones(1, 4), like=b, canvas_size=(8, 8)).canvas_size
            (8, 8)
        """
        return cls._wrap(
            tensor,
            format=kwargs.get("format", like.format),
            canvas_size=kwargs.get("canvas_size", like.canvas_size),
            clamping_mode=kwargs.get("clamping_mode", like.clamping_mode),
        )

    def __new__(
        cls,
        data: Any,
        *,
        format: BoundingBoxFormat | str,
        canvas_size: tuple[int, int],
        clamping_mode: str | None = "soft",
        dtype: torch.dtype | None = None,
        device: torch.device | str | int | None = None,
        requires_grad: bool | None = None,
    ) -> BoundingBoxes:
        tensor = cls._to_tensor(data, dtype, device, requires_grad)
        if is_rotated_bounding_format(_as_format(format)) and not tensor.is_floating_point():
            raise ValueError(
                f"BoundingBoxes: rotated boxes must be floating point, got {tensor.dtype}"
            )
        return cls._wrap(
            tensor, format=format, canvas_size=canvas_size, clamping_mode=clamping_mode
        )

    @classmethod
    def _wrap_output(
        cls, output: Any, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None
    ) -> Any:
        # The metadata comes from the first BoundingBoxes among the arguments.
        flat, _ = tree_flatten((tuple(args), dict(kwargs or {})))
        like = next(x for x in flat if isinstance(x, BoundingBoxes))
        meta = {
            "format": like.format,
            "canvas_size": like.canvas_size,
            "clamping_mode": like.clamping_mode,
        }
        if isinstance(output, torch.Tensor) and not isinstance(output, BoundingBoxes):
            return BoundingBoxes._wrap(output, check_dims=False, **meta)
        if isinstance(output, (tuple, list)):  # chunk(), unbind()
            return type(output)(BoundingBoxes._wrap(p, check_dims=False, **meta) for p in output)
        return output

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]
        return self._make_repr(
            format=self.format, canvas_size=self.canvas_size, clamping_mode=self.clamping_mode
        )


class KeyPoints(TVTensor):
    """Points ``[..., 2]`` (x, y) on an image of ``canvas_size`` (height, width).

    As ``torchvision.tv_tensors.KeyPoints``: any leading shape (``[N, 2]`` points,
    ``[N_polygons, N_points, 2]`` polygons, ``[N_skeletons, N_bones, 2, 2]``
    skeletons); a 1-D input is one point. Geometry transforms move them with the image.

    Example:
        >>> k = KeyPoints([[1, 2], [3, 4]], canvas_size=(10, 20))
        >>> k.shape, k.canvas_size
        (torch.Size([2, 2]), (10, 20))
    """

    canvas_size: tuple[int, int]

    @classmethod
    def _wrap(
        cls, tensor: torch.Tensor, *, canvas_size: tuple[int, int], check_dims: bool = True
    ) -> KeyPoints:
        if check_dims:
            if tensor.ndim == 1:
                tensor = tensor.unsqueeze(0)
            elif tensor.ndim == 0 or tensor.shape[-1] != 2:
                raise ValueError(
                    f"KeyPoints: expected a tensor of shape [..., 2], got {tuple(tensor.shape)}"
                )
        points = tensor.as_subclass(cls)
        points.canvas_size = _as_canvas_size(canvas_size)
        return points

    @classmethod
    def wrap(  # type: ignore[override]
        cls, tensor: torch.Tensor, like: KeyPoints, **kwargs: Any
    ) -> KeyPoints:
        """``tensor`` as key points with the canvas of ``like`` (or ``canvas_size=``).

        Example:
            >>> import torch
            >>> k = KeyPoints([[0, 0]], canvas_size=(4, 4))
            >>> KeyPoints.wrap(torch.ones(1, 2), like=k, canvas_size=(8, 8)).canvas_size
            (8, 8)
        """
        return cls._wrap(tensor, canvas_size=kwargs.get("canvas_size", like.canvas_size))

    def __new__(
        cls,
        data: Any,
        *,
        canvas_size: tuple[int, int],
        dtype: torch.dtype | None = None,
        device: torch.device | str | int | None = None,
        requires_grad: bool | None = None,
    ) -> KeyPoints:
        tensor = cls._to_tensor(data, dtype, device, requires_grad)
        return cls._wrap(tensor, canvas_size=canvas_size)

    @classmethod
    def _wrap_output(
        cls, output: Any, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None
    ) -> Any:
        # The canvas comes from the first KeyPoints among the arguments.
        flat, _ = tree_flatten((tuple(args), dict(kwargs or {})))
        like = next(x for x in flat if isinstance(x, KeyPoints))
        if isinstance(output, torch.Tensor) and not isinstance(output, KeyPoints):
            return KeyPoints._wrap(output, canvas_size=like.canvas_size, check_dims=False)
        if isinstance(output, (tuple, list)):  # chunk(), unbind()
            return type(output)(
                KeyPoints._wrap(p, canvas_size=like.canvas_size, check_dims=False) for p in output
            )
        return output

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]
        return self._make_repr(canvas_size=self.canvas_size)


# torch's lazy form of torch.compiler.disable: importing dynamo (and sympy) at import time
# would cost every process ~70 MiB and a second, compiled or not.
@torch._disable_dynamo
def wrap(wrappee: torch.Tensor, *, like: TVTensor, **kwargs: Any) -> TVTensor:
    """``wrappee`` as the type of ``like``, with its metadata (``kwargs`` override fields).

    Example:
        >>> import torch
        >>> boxes = BoundingBoxes([[0, 0, 4, 4]], format="XYXY", canvas_size=(8, 8))
        >>> wrap(torch.zeros(1, 4), like=boxes, canvas_size=(16, 16)).canvas_size
        (16, 16)
    """
    if not isinstance(like, TVTensor):
        raise TypeError(f"wrap: like must be a TVTensor, got {type(like).__name__}")
    return type(like).wrap(wrappee, like, **kwargs)
