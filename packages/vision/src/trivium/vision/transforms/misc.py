"""Identity, linear maps, noise, JPEG artefacts and temporal subsampling of videos.

``torchvision.transforms.v2``'s names and arguments. ``GaussianNoise`` and ``JPEG`` take
``generator=``; ``JPEG`` also ``per_sample=True`` (a quality drawn for every image of
a batch). Boxes and masks pass through all of them.

Example:
    >>> import torch
    >>> t = JPEG((50, 90), generator=torch.Generator().manual_seed(0))
    >>> t(torch.zeros(2, 3, 16, 16, dtype=torch.uint8)).shape
    torch.Size([2, 3, 16, 16])
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from trivium.core import Transform
from trivium.core.transform import flatten_inputs
from trivium.vision import tv_tensors
from trivium.vision.transforms._base import _IMAGE, ImageTransform, _leaf_kinds
from trivium.vision.transforms._image import check_image, is_pil
from trivium.vision.transforms.functional.misc import (
    add_noise,
    check_noise_args,
    check_quality,
    jpeg_image,
    noise_dtype,
    uniform_temporal_subsample_video,
)

__all__ = [
    "JPEG",
    "GaussianNoise",
    "Identity",
    "LinearTransformation",
    "UniformTemporalSubsample",
]


class Identity(Transform):
    """Return the inputs unchanged.

    Example:
        >>> Identity()(1, {"a": 2})
        (1, {'a': 2})
    """

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Return ``inpt``.

        Example:
            >>> Identity().transform("x", {})
            'x'
        """
        return inpt


class LinearTransformation(ImageTransform):
    """``(x - mean_vector) @ transformation_matrix`` on each image flattened to ``D = C * H * W``.

    E.g. ZCA whitening with a matrix computed offline. ``transformation_matrix`` is
    ``[D, D]`` and ``mean_vector`` ``[D]``, of one dtype and device. PIL images are
    refused (as torchvision's); boxes and masks pass through. Works under
    ``torch.jit.script``.

    Example:
        >>> import torch
        >>> t = LinearTransformation(2 * torch.eye(4), torch.ones(4))
        >>> t(torch.ones(1, 2, 2)).flatten().tolist()
        [0.0, 0.0, 0.0, 0.0]
    """

    _passthrough_tv_tensors = True

    def __init__(self, transformation_matrix: torch.Tensor, mean_vector: torch.Tensor) -> None:
        super().__init__()
        name = type(self).__name__
        for arg, value in (
            ("transformation_matrix", transformation_matrix),
            ("mean_vector", mean_vector),
        ):
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"{name}: {arg} must be a tensor, got {type(value).__name__}")
        if (
            transformation_matrix.ndim != 2
            or transformation_matrix.shape[0] != transformation_matrix.shape[1]
        ):
            raise ValueError(
                f"{name}: transformation_matrix must be square, got shape "
                f"{tuple(transformation_matrix.shape)}"
            )
        if mean_vector.shape != transformation_matrix.shape[:1]:
            raise ValueError(
                f"{name}: mean_vector must have shape ({transformation_matrix.shape[0]},), as one "
                f"side of transformation_matrix, got {tuple(mean_vector.shape)}"
            )
        if transformation_matrix.device != mean_vector.device:
            raise ValueError(
                f"{name}: transformation_matrix and mean_vector must be on one device, got "
                f"{transformation_matrix.device} and {mean_vector.device}"
            )
        if transformation_matrix.dtype != mean_vector.dtype:
            raise ValueError(
                f"{name}: transformation_matrix and mean_vector must have one dtype, got "
                f"{transformation_matrix.dtype} and {mean_vector.dtype}"
            )
        self.transformation_matrix = transformation_matrix
        self.mean_vector = mean_vector

    def forward(self, *inputs: Any) -> Any:
        """Transform the sample's images; a PIL image is a ``TypeError``."""
        flat, _ = flatten_inputs(self, inputs)
        if any(is_pil(x) for x in flat):
            raise TypeError(f"{type(self).__name__} does not take PIL images")
        return super().forward(*inputs)

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Apply the matrix to one image tensor ``[..., C, H, W]``.

        Example:
            >>> import torch
            >>> LinearTransformation(torch.eye(2), torch.zeros(2)).transform(
            ...     torch.ones(1, 1, 2), {}).shape
            torch.Size([1, 1, 2])
        """
        return _linear_transformation(inpt, self.transformation_matrix, self.mean_vector)

    def __prepare_scriptable__(self) -> nn.Module:
        return _ScriptableLinearTransformation(self.transformation_matrix, self.mean_vector)


def _linear_transformation(
    img: torch.Tensor, matrix: torch.Tensor, mean: torch.Tensor
) -> torch.Tensor:
    """``(img.flatten() - mean) @ matrix`` per image ``[..., C, H, W]``; scriptable."""
    shape = img.shape
    n = shape[-3] * shape[-2] * shape[-1]
    if n != matrix.shape[0]:
        raise ValueError(
            f"LinearTransformation: the image has {shape[-3]} x {shape[-2]} x {shape[-1]} = {n} "
            f"values but transformation_matrix is {matrix.shape[0]} x {matrix.shape[0]}"
        )
    if img.device.type != mean.device.type:
        raise ValueError(
            f"LinearTransformation: the image is on {img.device} but transformation_matrix "
            f"and mean_vector on {mean.device}"
        )
    flat = img.reshape(-1, n) - mean
    return torch.mm(flat, matrix.to(flat.dtype)).reshape(shape)


class _ScriptableLinearTransformation(nn.Module):
    """What ``torch.jit.script(LinearTransformation(...))`` compiles: one tensor in, one out."""

    def __init__(self, matrix: torch.Tensor, mean: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("matrix", matrix)
        self.register_buffer("mean", mean)

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        return _linear_transformation(img, self.matrix, self.mean)


class GaussianNoise(ImageTransform):
    """Add Gaussian noise of ``mean`` and ``sigma`` (on the [0, 1] scale) to every value.

    uint8 and uint16 images get the noise times 255 / 65535, truncated; ``clip``
    keeps the values in the image's range (without it integer images wrap around,
    as torchvision's). The noise comes from ``generator`` (torch's default one when
    None, as torchvision's); every image of a batch gets its own.

    Example:
        >>> import torch
        >>> t = GaussianNoise(sigma=0.1, generator=torch.Generator().manual_seed(0))
        >>> round(t(torch.full((1, 64, 64), 0.5)).std().item(), 1)
        0.1
    """

    _passthrough_tv_tensors = True

    def __init__(
        self,
        mean: float = 0.0,
        sigma: float = 0.1,
        clip: bool = True,
        *,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(generator=generator)
        self.mean, self.sigma = check_noise_args(type(self).__name__, mean, sigma)
        self.clip = bool(clip)

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Add fresh noise to one image tensor.

        Example:
            >>> import torch
            >>> GaussianNoise(mean=1.0, sigma=0.0).transform(torch.zeros(1, 2, 2), {}).max().item()
            1.0
        """
        check_image(type(self).__name__, inpt)
        dtype = noise_dtype(inpt)
        noise = self._sample(
            lambda where, **gen: torch.randn(inpt.shape, dtype=dtype, device=where, **gen),
            inpt.device,
        )
        return add_noise(inpt, noise, self.mean, self.sigma, self.clip)


class JPEG(ImageTransform):
    """JPEG compression artefacts: encode at a ``quality`` drawn from ``[min, max]``, decode.

    ``quality`` is one int in 1..100 or a ``(min, max)`` pair, drawn (inclusive) once
    per call, or per image with ``per_sample=True``. uint8 images (1 or 3 channels)
    make 8-bit JPEGs and uint16 ones 12-bit JPEGs, through Trivium's codec
    (:func:`~trivium.vision.transforms.functional.jpeg_image`).

    Example:
        >>> import torch
        >>> img = torch.full((3, 16, 16), 100, dtype=torch.uint8)
        >>> JPEG(95)(img).sub(100).abs().max().item() <= 1
        True
    """

    _passthrough_tv_tensors = True
    _per_image_params = ("quality",)

    def __init__(
        self,
        quality: int | Sequence[int],
        *,
        per_sample: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(per_sample=per_sample, generator=generator)
        name = type(self).__name__
        if isinstance(quality, numbers.Integral) and not isinstance(quality, bool):
            bounds = [quality, quality]
        elif isinstance(quality, Sequence) and not isinstance(quality, str) and len(quality) == 2:
            bounds = list(quality)
        else:
            raise TypeError(f"{name}: quality must be an int or a (min, max) pair, got {quality!r}")
        low, high = (check_quality(name, q) for q in bounds)
        if low > high:
            raise ValueError(f"{name}: quality must be (min, max) with min <= max, got {quality!r}")
        self.quality = (low, high)

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        img = inputs[0]
        check_image(type(self).__name__, img, channels=(1, 3), allow_float=False)
        low, high = self.quality
        if self.per_sample:
            return {"quality": self._randint(low, high + 1, (self.num_samples(img),))}
        return {"quality": int(self._randint(low, high + 1, ()))}

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Encode and decode one image tensor (or a batch) at the drawn quality.

        Example:
            >>> import torch
            >>> JPEG(50).transform(torch.zeros(1, 8, 8, dtype=torch.uint8), {"quality": 50}).shape
            torch.Size([1, 8, 8])
        """
        return jpeg_image(inpt, params["quality"])


class UniformTemporalSubsample(Transform):
    """Keep ``num_samples`` evenly spaced frames of the sample's videos ``[..., T, C, H, W]``.

    Plain tensors and ``tv_tensors.Video`` are subsampled (torchvision's rule: a plain
    tensor when the sample holds no typed image); images, boxes and the rest pass
    through. See :func:`~trivium.vision.transforms.functional.uniform_temporal_subsample`.

    Example:
        >>> import torch
        >>> UniformTemporalSubsample(4)(torch.zeros(16, 3, 8, 8)).shape
        torch.Size([4, 3, 8, 8])
    """

    def __init__(self, num_samples: int) -> None:
        super().__init__()
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(
                f"UniformTemporalSubsample: num_samples must be a positive int, got {num_samples!r}"
            )
        self.num_samples = num_samples

    def forward(self, *inputs: Any) -> Any:
        """Subsample the sample's videos (see the class docstring)."""
        flat, rebuild = flatten_inputs(self, inputs)
        kinds = _leaf_kinds(flat)
        return rebuild(
            [
                self.transform(x, {}) if self._subsamples(x, k) else x
                for x, k in zip(flat, kinds, strict=True)
            ]
        )

    @staticmethod
    def _subsamples(inpt: Any, kind: str) -> bool:
        if isinstance(inpt, tv_tensors.Video):
            return True
        return kind == _IMAGE and type(inpt) is torch.Tensor

    def transform(self, inpt: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        """Subsample one video tensor.

        Example:
            >>> import torch
            >>> UniformTemporalSubsample(2).transform(torch.zeros(5, 1, 2, 2), {}).shape
            torch.Size([2, 1, 2, 2])
        """
        if isinstance(inpt, tv_tensors.Video):
            out = uniform_temporal_subsample_video(inpt.as_subclass(torch.Tensor), self.num_samples)
            return tv_tensors.wrap(out, like=inpt)
        return uniform_temporal_subsample_video(inpt, self.num_samples)
