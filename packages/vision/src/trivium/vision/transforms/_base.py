"""``ImageTransform``: the base of the image transforms.

It adds to :class:`trivium.core.Transform`:

* images in, images out: tensors ``[..., C, H, W]`` and PIL images are transformed
  (a PIL image goes through its tensor and comes back as a PIL image of the same
  mode), every other input passes through unchanged;
* ``per_sample``: with ``per_sample=True`` a random transform draws independent
  parameters for every image of a batch, as tensors with one row per image of the
  flattened batch, and applies them in one batched kernel call (no Python loop);
* compile-safe randomness: :meth:`ImageTransform._draw` samples from the
  transform's ``generator``; under ``torch.compile`` (which cannot trace a
  ``torch.Generator``) it samples from torch's default generator instead, so seed
  compiled pipelines with ``torch.manual_seed``.

Example:
    >>> import torch
    >>> class Invert(ImageTransform):
    ...     def transform(self, inpt, params):
    ...         return 255 - inpt
    >>> img, label = Invert()(torch.zeros(3, 2, 2, dtype=torch.uint8), 7)
    >>> int(img.max()), label
    (255, 7)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from trivium.core import Transform
from trivium.core.transform import _flatten
from trivium.vision.transforms._image import is_image, is_pil, pil_to_tensor, to_pil_image

__all__ = ["ImageTransform"]


class ImageTransform(Transform):
    """Base class of the image transforms (see the module docstring).

    Subclasses implement ``make_params(inputs)`` and ``transform(inpt, params)``
    like any :class:`trivium.core.Transform`; ``transform`` only ever sees tensors.
    ``inputs`` given to ``make_params`` are the images only (PIL images already
    converted), so ``inputs[0]`` is always a tensor ``[..., C, H, W]``.

    Example:
        >>> import torch
        >>> class Brighten(ImageTransform):
        ...     def make_params(self, inputs):
        ...         n = self.num_samples(inputs[0])
        ...         return {"gain": 1 + self._draw((n,), inputs[0].device)}
        ...     def transform(self, inpt, params):
        ...         return inpt * params["gain"].view(-1, 1, 1, 1)
        >>> Brighten(per_sample=True)(torch.ones(4, 3, 2, 2)).shape
        torch.Size([4, 3, 2, 2])
    """

    def __init__(self, *, per_sample: bool = False, generator: torch.Generator | None = None):
        super().__init__(generator)
        if not isinstance(per_sample, bool):
            raise TypeError(f"{type(self).__name__}: per_sample must be a bool, got {per_sample!r}")
        self.per_sample = per_sample

    def forward(self, *inputs: Any) -> Any:
        """Transform every image among ``inputs`` with one draw of parameters.

        Example:
            >>> import torch
            >>> class Zero(ImageTransform):
            ...     def transform(self, inpt, params):
            ...         return inpt * 0
            >>> Zero()(torch.ones(1, 2, 2), "keep")[1]
            'keep'
        """
        flat, rebuild = _flatten(self, inputs)
        as_tensors = [pil_to_tensor(x) if is_pil(x) else x for x in flat]
        images = [t for x, t in zip(flat, as_tensors, strict=True) if is_image(x)]
        if not images:
            raise TypeError(
                f"{type(self).__name__}: expected an image tensor [..., C, H, W] or a PIL image "
                f"among the inputs, got {', '.join(type(x).__name__ for x in flat)}"
            )
        params = self.make_params(images)
        outputs = [
            self._transform_one(x, t, params) if is_image(x) else x
            for x, t in zip(flat, as_tensors, strict=True)
        ]
        return rebuild(outputs)

    def _transform_one(self, original: Any, tensor: torch.Tensor, params: dict[str, Any]) -> Any:
        out = self.transform(tensor, params)
        if not is_pil(original):
            return out
        if isinstance(out, (tuple, list)):  # e.g. FiveCrop: one PIL image per crop
            return type(out)(self._as_pil(original, tensor, o) for o in out)
        return self._as_pil(original, tensor, out)

    @staticmethod
    def _as_pil(original: Any, tensor: torch.Tensor, out: Any) -> Any:
        if not isinstance(out, torch.Tensor):
            return out
        return to_pil_image(out, mode=original.mode if out.shape[-3] == tensor.shape[-3] else None)

    # Parameter sampling helpers.

    @staticmethod
    def num_samples(img: torch.Tensor) -> int:
        """Number of images in a ``[..., C, H, W]`` batch (1 for a single image).

        Example:
            >>> import torch
            >>> ImageTransform.num_samples(torch.zeros(2, 5, 3, 4, 4))
            10
        """
        n = 1
        for d in img.shape[:-3]:
            n *= d
        return n

    def _tensor_params(self) -> bool:
        """Whether to draw parameters as tensors: with ``per_sample`` or under ``torch.compile``.

        On that path the kernels take tensor parameters and never branch on random
        values in Python (which ``torch.compile(fullgraph=True)`` cannot trace).
        """
        return self.per_sample or torch.compiler.is_compiling()

    def _num_draws(self, img: torch.Tensor) -> int:
        """How many parameter sets to draw: one per image when ``per_sample``, else one."""
        return self.num_samples(img) if self.per_sample else 1

    def _draw(self, shape: Sequence[int], device: torch.device | None = None) -> torch.Tensor:
        """Uniform samples in [0, 1) on ``device`` from ``generator`` (default RNG if compiling)."""
        if torch.compiler.is_compiling():
            return torch.rand(tuple(shape), device=device)
        values = self._rand(shape)
        return values if device is None else values.to(device, non_blocking=True)
