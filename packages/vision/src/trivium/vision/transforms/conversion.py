"""Conversion transforms: ``ToImage``, ``PILToTensor``, ``ToDtype``, ``Normalize``, ``Lambda``.

Example:
    >>> import torch
    >>> from PIL import Image
    >>> from trivium.vision.transforms import Compose
    >>> steps = [ToImage(), ToDtype(torch.float32, scale=True), Normalize([0.5] * 3, [0.5] * 3)]
    >>> Compose(steps)(Image.new("RGB", (4, 2), (255, 0, 0)))[:, 0, 0].tolist()
    [1.0, -1.0, -1.0]
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from trivium.core import Transform
from trivium.core.transform import flatten_inputs
from trivium.vision import tv_tensors
from trivium.vision.transforms._base import (
    _IMAGE,
    _OTHER,
    _TYPED,
    ImageTransform,
    _as_image_tensor,
    _leaf_kinds,
)
from trivium.vision.transforms._image import check_image, is_pil, pil_to_tensor
from trivium.vision.transforms._scriptable import NormalizeModule, ToDtypeModule
from trivium.vision.transforms.functional.conversion import (
    _max_value,
    _normalize_image,
    _normalize_with,
    _scale_normalize,
    _to_dtype_image,
    check_normalize_args,
    to_image,
    to_pil_image_v1,
    to_tensor,
)

__all__ = [
    "ConvertImageDtype",
    "Lambda",
    "Normalize",
    "PILToTensor",
    "ToDtype",
    "ToImage",
    "ToPILImage",
    "ToPureTensor",
    "ToTensor",
]


class ToImage(Transform):
    """Turn PIL images, NumPy arrays ``[H, W(, C)]`` and plain image tensors into
    ``[C, H, W]`` ``tv_tensors.Image``, as torchvision's ``ToImage``.

    The plain tensors converted are those the transforms take as images (3 or more
    dims, and no ``tv_tensors.Image``/``Video`` in the sample); tv_tensors, labels and
    the rest are returned unchanged.

    Example:
        >>> import numpy as np
        >>> img, label = ToImage()(np.zeros((4, 5, 3), dtype=np.uint8), 3)
        >>> type(img).__name__, tuple(img.shape), label
        ('Image', (3, 4, 5), 3)
    """

    def forward(self, *inputs: Any) -> Any:
        """Convert every image among ``inputs`` (see the class docstring)."""
        flat, rebuild = flatten_inputs(self, inputs)
        convert = self.active_transform()
        return rebuild(
            [
                convert(x, {}) if kind == _IMAGE or isinstance(x, np.ndarray) else x
                for x, kind in zip(flat, _leaf_kinds(flat), strict=True)
            ]
        )

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Convert one input (PIL image, array or plain tensor), or return it unchanged.

        Example:
            >>> ToImage().transform("label", {})
            'label'
        """
        if isinstance(inpt, tv_tensors.TVTensor):
            return inpt
        if is_pil(inpt) or isinstance(inpt, np.ndarray | torch.Tensor):
            return to_image(inpt)
        return inpt

    def transform_traced(self, inpt: Any, params: dict[str, Any]) -> Any:
        """:meth:`transform` giving a plain tensor for a tensor: a traced graph
        (``torch.compile``, ``torch.export``) carries no tensor subclass.

        Example:
            >>> import torch
            >>> type(ToImage().transform_traced(torch.zeros(3, 2, 2), {})).__name__
            'Tensor'
        """
        if isinstance(inpt, torch.Tensor) and not isinstance(inpt, tv_tensors.TVTensor):
            return inpt.unsqueeze(0) if inpt.ndim == 2 else inpt
        return self.transform(inpt, params)


class PILToTensor(ToImage):
    """Turn PIL images into ``uint8`` ``[C, H, W]`` tensors; other inputs pass through.

    Example:
        >>> from PIL import Image
        >>> PILToTensor()(Image.new("L", (3, 2))).shape
        torch.Size([1, 2, 3])
    """

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Convert one PIL image, or return the input unchanged.

        Example:
            >>> import numpy as np
            >>> type(PILToTensor().transform(np.zeros(2), {})).__name__
            'ndarray'
        """
        return pil_to_tensor(inpt) if is_pil(inpt) else inpt


class _TensorOut(ImageTransform):
    """Base of transforms whose output cannot be a PIL image (a PIL input gives a tensor)."""

    def _output(self, original: Any, tensor: torch.Tensor, out: Any) -> Any:
        return out if is_pil(original) else super()._output(original, tensor, out)


class ToDtype(_TensorOut):
    """Convert images to ``dtype``; ``scale=True`` maps the range (uint8 [0, 255] <-> float [0, 1]).

    With one ``torch.dtype`` only images are converted (boxes, masks and labels pass
    through). A dict converts per type, as ``torchvision.transforms.v2.ToDtype``:
    ``{tv_tensors.Image: torch.float32, tv_tensors.Mask: torch.int64, "others": None}``
    (``torch.Tensor`` is the key of plain image tensors and PIL images, ``"others"``
    the catch-all, ``None`` no conversion); ``scale`` applies to images only. A PIL
    image comes out as a tensor. Works under ``torch.jit.script`` and ``torch.export``
    (with one dtype).

    Example:
        >>> import torch
        >>> ToDtype(torch.float32, scale=True)(torch.full((1, 1, 2), 255, dtype=torch.uint8))
        tensor([[[1., 1.]]])
        >>> from trivium.vision import tv_tensors
        >>> t = ToDtype({tv_tensors.Image: torch.float32, tv_tensors.Mask: torch.int64,
        ...              "others": None}, scale=True)
        >>> img = tv_tensors.Image(torch.full((1, 1, 1), 255, dtype=torch.uint8))
        >>> out = t(img, tv_tensors.Mask(torch.ones(1, 1, dtype=torch.uint8)))
        >>> type(out[0]).__name__, out[0].item(), out[1].dtype
        ('Image', 1.0, torch.int64)
    """

    _passthrough_tv_tensors = True  # boxes and masks keep their place

    def __init__(
        self, dtype: torch.dtype | dict[type | str, torch.dtype | None], scale: bool = False
    ) -> None:
        super().__init__()
        self.dtype = _check_dtypes(dtype)
        self.scale = bool(scale)

    def forward(self, *inputs: Any) -> Any:
        """Convert the inputs (see the class docstring).

        Example:
            >>> import torch
            >>> ToDtype({torch.Tensor: torch.float64})(torch.zeros(1, 1, 1), 3)[0].dtype
            torch.float64
        """
        if isinstance(self.dtype, torch.dtype):
            return super().forward(*inputs)
        flat, rebuild = flatten_inputs(self, inputs)
        return rebuild(
            [self._convert_leaf(x, k) for x, k in zip(flat, _leaf_kinds(flat), strict=True)]
        )

    def _convert_leaf(self, inpt: Any, kind: str) -> Any:
        """One leaf of a sample converted by the dict form of ``dtype``."""
        if kind == _OTHER:
            return inpt
        dtype = self._dtype_for(inpt)
        if dtype is None:
            return inpt
        if kind == _TYPED:  # masks, boxes: a cast without scaling
            return inpt.to(dtype)
        out = self.transform(_as_image_tensor(inpt), {"dtype": dtype})
        return self._output(inpt, out, out)

    def _dtype_for(self, inpt: Any) -> torch.dtype | None:
        assert isinstance(self.dtype, dict)
        key = type(inpt) if isinstance(inpt, tv_tensors.TVTensor) else torch.Tensor
        if key in self.dtype:
            return self.dtype[key]
        if "others" in self.dtype:
            return self.dtype["others"]
        raise ValueError(
            f"ToDtype: no dtype for {key.__name__} inputs; add it to the dict, or an "
            f'"others" entry (None passes the rest through)'
        )

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Convert one image tensor.

        Example:
            >>> import torch
            >>> ToDtype(torch.uint8, scale=True).transform(torch.ones(1, 1, 1), {}).item()
            255
        """
        if not isinstance(inpt, torch.Tensor) or inpt.ndim < 3:
            check_image("ToDtype", inpt)
        if inpt.dtype.is_complex or inpt.dtype == torch.bool:
            raise TypeError(f"ToDtype: expected an image of numbers, got dtype {inpt.dtype}")
        return _to_dtype_image(inpt, params.get("dtype", self.dtype), self.scale)

    def _fuse_next(self, following: Any) -> Callable[[Any], Any] | None:
        """ToDtype(float, scale=True) then Normalize: one pass over an integer image.

        :class:`~trivium.vision.transforms.Compose` asks each transform for a fused step
        with the one after it; None: no fused step.
        """
        fusable = (
            type(following) is Normalize
            and isinstance(self.dtype, torch.dtype)
            and self.scale
            and self.dtype in (torch.float32, torch.float64)
        )
        return functools.partial(_to_float_normalized, self, following) if fusable else None

    def __prepare_scriptable__(self) -> nn.Module:
        if not isinstance(self.dtype, torch.dtype):
            raise TypeError("ToDtype: torch.jit.script takes one dtype, not a dict of them")
        return ToDtypeModule(self.dtype, self.scale)


class Normalize(_TensorOut):
    """``(img - mean) / std`` per channel on floating images (torchvision's ``Normalize``).

    Works under ``torch.jit.script`` and ``torch.export``.

    Example:
        >>> import torch
        >>> Normalize(mean=[0.5], std=[0.25])(torch.ones(1, 1, 1)).item()
        2.0
    """

    _passthrough_tv_tensors = True  # boxes and masks keep their place

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None:
        super().__init__()
        self.mean, self.std = check_normalize_args("Normalize", mean, std)
        self.inplace = bool(inplace)
        self._stats_cache: dict[tuple[torch.dtype, torch.device], tuple[torch.Tensor, ...]] = {}
        self._scale_shift_cache: dict[tuple[Any, ...], tuple[torch.Tensor, ...]] = {}

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Normalize one image tensor.

        Example:
            >>> import torch
            >>> Normalize([0.0], [2.0]).transform(torch.ones(1, 1, 1), {}).item()
            0.5
        """
        self._check(inpt)
        mean, std = self._stats(inpt.dtype, inpt.device)
        return _normalize_with(inpt, mean, std, self.inplace)

    def transform_traced(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """:meth:`transform` without the cache of mean and std tensors (for ``torch.compile``).

        Example:
            >>> import torch
            >>> Normalize([0.0], [2.0]).transform_traced(torch.ones(1, 1, 1), {}).item()
            0.5
        """
        self._check(inpt)
        return _normalize_image(inpt, self.mean, self.std, self.inplace)

    def _check(self, inpt: torch.Tensor) -> None:
        check_image("Normalize", inpt, allow_int=False)
        channels = inpt.shape[-3]
        for name, values in (("mean", self.mean), ("std", self.std)):
            if len(values) != 1 and len(values) != channels:
                raise ValueError(
                    f"Normalize: {name} has {len(values)} values but the image has "
                    f"{channels} channels (shape {tuple(inpt.shape)})"
                )

    def _stats(self, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and std as [C, 1, 1] tensors, cached per dtype and device (saves two per call)."""
        key = (dtype, device)
        stats = self._stats_cache.get(key)
        if stats is None:
            stats = tuple(
                torch.tensor(v, dtype=dtype, device=device).view(-1, 1, 1)
                for v in (self.mean, self.std)
            )
            self._stats_cache[key] = stats
        return stats

    def _scale_shift(
        self, source: torch.dtype, dtype: torch.dtype, device: torch.device
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``1 / (max * std)`` and ``-mean / std`` ([C, 1, 1]) for a scaled integer image."""
        key = (source, dtype, device)
        stats = self._scale_shift_cache.get(key)
        if stats is None:
            mean, std = (torch.tensor(v, dtype=torch.float64) for v in (self.mean, self.std))
            stats = tuple(
                v.to(dtype=dtype, device=device).view(-1, 1, 1)
                for v in (1.0 / (_max_value(source) * std), -mean / std)
            )
            self._scale_shift_cache[key] = stats
        return stats

    def __prepare_scriptable__(self) -> nn.Module:
        return NormalizeModule(self.mean, self.std, self.inplace)


def _check_dtypes(dtype: Any) -> torch.dtype | dict[type | str, torch.dtype | None]:
    """``ToDtype``'s ``dtype``: one image dtype, or a dict of them by input type."""
    if isinstance(dtype, dict):
        for key, value in dtype.items():
            if key != "others" and not isinstance(key, type):
                raise TypeError(f'ToDtype: dtype keys must be types or "others", got {key!r}')
            if value is not None and not isinstance(value, torch.dtype):
                raise TypeError(f"ToDtype: dtype[{key!r}] must be a torch.dtype or None")
        return dict(dtype)
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"ToDtype: dtype must be a torch.dtype or a dict, got {dtype!r}")
    if dtype.is_complex or dtype == torch.bool:
        raise ValueError(f"ToDtype: cannot convert images to {dtype}")
    return dtype


def _to_float_normalized(to_dtype: ToDtype, normalize: Normalize, inpt: Any) -> Any:
    """``normalize(to_dtype(inpt))``: an integer image tensor (plain, or the
    ``tv_tensors.Image`` that ``ToImage`` gives) takes one fused pass."""
    image = inpt.as_subclass(torch.Tensor) if type(inpt) is tv_tensors.Image else inpt
    fused = (
        type(image) is torch.Tensor
        and image.ndim >= 3
        and image.numel() > 0
        and not (image.is_floating_point() or image.is_complex() or image.dtype == torch.bool)
        and len(normalize.mean) in (1, image.shape[-3])
        and len(normalize.std) in (1, image.shape[-3])
    )
    if not fused:  # the two steps give the results and the errors
        return normalize(to_dtype(inpt))
    scale, shift = normalize._scale_shift(image.dtype, to_dtype.dtype, image.device)
    out = _scale_normalize(image, scale, shift)
    return out if image is inpt else out.as_subclass(tv_tensors.Image)


class Lambda(Transform):
    """Apply ``lambd`` to every input whose type is one of ``types`` (all inputs by default).

    Example:
        >>> Lambda(lambda x: x * 2, int)(3, "label")
        (6, 'label')
    """

    def __init__(self, lambd: Callable[[Any], Any], *types: type) -> None:
        super().__init__()
        if not callable(lambd):
            raise TypeError(f"Lambda: lambd must be callable, got {type(lambd).__name__}")
        self.lambd = lambd
        self.types = types or (object,)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Apply the function when ``inpt`` has one of the types.

        Example:
            >>> Lambda(str.upper, str).transform("a", {})
            'A'
        """
        return self.lambd(inpt) if isinstance(inpt, self.types) else inpt

    def extra_repr(self) -> str:
        """Show the function and the types.

        Example:
            >>> Lambda(abs)
            Lambda(abs, types=['object'])
        """
        name = getattr(self.lambd, "__name__", type(self.lambd).__name__)
        return f"{name}, types={[t.__name__ for t in self.types]}"


class ConvertImageDtype(ToDtype):
    """``ToDtype(dtype, scale=True)`` under torchvision's older name: images only, range mapped.

    Works under ``torch.jit.script`` and ``torch.export``.

    Example:
        >>> import torch
        >>> ConvertImageDtype()(torch.full((1, 1, 2), 255, dtype=torch.uint8))
        tensor([[[1., 1.]]])
    """

    def __init__(self, dtype: torch.dtype = torch.float32) -> None:
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"ConvertImageDtype: dtype must be a torch.dtype, got {dtype!r}")
        super().__init__(dtype, scale=True)


class ToTensor(Transform):
    """PIL images and arrays ``[H, W(, C)]`` to ``[C, H, W]`` tensors, 8-bit data in [0, 1].

    torchvision's v1 ``ToTensor`` (see :func:`~trivium.vision.transforms.functional.to_tensor`
    for the modes and dtypes); other inputs pass through. Prefer
    ``Compose([ToImage(), ToDtype(torch.float32, scale=True)])``.

    Example:
        >>> from PIL import Image
        >>> ToTensor()(Image.new("RGB", (4, 2), (255, 0, 0)))[:, 0, 0].tolist()
        [1.0, 0.0, 0.0]
    """

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Convert one PIL image or array; other inputs unchanged.

        Example:
            >>> ToTensor().transform("label", {})
            'label'
        """
        if is_pil(inpt) or isinstance(inpt, np.ndarray):
            return to_tensor(inpt)
        return inpt


class ToPILImage(Transform):
    """Tensors ``[C, H, W]`` and arrays ``[H, W, C]`` to PIL images (torchvision's v1 rules).

    Floats are scaled by 255 and truncated; ``mode`` None picks ``L`` / ``LA`` /
    ``RGB`` / ``RGBA`` for uint8 data by the channel count (one channel of int16,
    int32 or float32 gives ``I;16``, ``I`` or ``F``); a given ``mode`` must fit the
    channels (3: ``RGB``, ``YCbCr``, ``HSV``; 4: ``RGBA``, ``CMYK``, ``RGBX``). As in
    torchvision, a plain tensor is converted when the sample holds no
    ``tv_tensors.Image``; PIL images, videos and other inputs pass through.

    Example:
        >>> import torch
        >>> ToPILImage()(torch.zeros(3, 2, 4, dtype=torch.uint8)).size
        (4, 2)
        >>> ToPILImage("HSV")(torch.zeros(3, 2, 2, dtype=torch.uint8)).mode
        'HSV'
    """

    def __init__(self, mode: str | None = None) -> None:
        super().__init__()
        if mode is not None and not isinstance(mode, str):
            raise TypeError(f"ToPILImage: mode must be a PIL mode name or None, got {mode!r}")
        self.mode = mode

    def forward(self, *inputs: Any) -> Any:
        """Convert the sample's images (see the class docstring)."""
        flat, rebuild = flatten_inputs(self, inputs)
        if len(flat) == 1 and isinstance(flat[0], torch.Tensor):  # a lone 2-D image too
            kinds = [_IMAGE]
        else:
            kinds = _leaf_kinds(flat)
        return rebuild(
            [
                self.transform(x, {}) if self._converts(x, k) else x
                for x, k in zip(flat, kinds, strict=True)
            ]
        )

    @staticmethod
    def _converts(inpt: Any, kind: str) -> bool:
        if isinstance(inpt, np.ndarray):
            return True
        is_tensor = isinstance(inpt, torch.Tensor) and not isinstance(inpt, tv_tensors.Video)
        return kind == _IMAGE and is_tensor

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Convert one tensor or array to a PIL image.

        Example:
            >>> import numpy as np
            >>> ToPILImage().transform(np.zeros((2, 3), dtype=np.float32), {}).mode
            'L'
        """
        return to_pil_image_v1(inpt, self.mode)


class ToPureTensor(Transform):
    """Every tv_tensor of the sample as a plain ``torch.Tensor`` (values unchanged, metadata gone).

    Example:
        >>> import torch
        >>> from trivium.vision import tv_tensors
        >>> type(ToPureTensor()(tv_tensors.Mask(torch.zeros(2, 2)))).__name__
        'Tensor'
    """

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """A tv_tensor as a plain tensor; other inputs unchanged.

        Example:
            >>> ToPureTensor().transform(3, {})
            3
        """
        if isinstance(inpt, tv_tensors.TVTensor):
            return inpt.as_subclass(torch.Tensor)
        return inpt


# Normalising or casting an image leaves boxes and masks where they are.
