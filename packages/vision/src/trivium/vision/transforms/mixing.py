"""Batch mixing: ``MixUp`` and ``CutMix`` on ``(images, labels)``, as torchvision v2.

Both mix every image with the next one in the batch (the batch rolled by one)
and return soft labels ``[N, num_classes]`` weighted the same way. The mixing
weight ``lam`` is drawn from Beta(``alpha``, ``alpha``) as ``Ga / (Ga + Gb)``
with two Gamma(``alpha``) draws from ``generator`` (``torch._standard_gamma``
takes one), so a seeded run is reproducible. All parameters stay tensors: no
host sync on CUDA and no Python branch under ``torch.compile``.

Example:
    >>> import torch
    >>> mixup = MixUp(num_classes=10, generator=torch.Generator().manual_seed(0))
    >>> images, labels = mixup(torch.rand(4, 3, 8, 8), torch.tensor([0, 1, 2, 3]))
    >>> labels.shape, bool(torch.allclose(labels.sum(1), torch.ones(4)))
    (torch.Size([4, 10]), True)
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from typing import Any

import torch

from trivium.core import Transform
from trivium.core.transform import flatten_inputs
from trivium.vision.transforms._image import check_image, image_where, is_pil
from trivium.vision.transforms.functional.color import _bound

__all__ = ["CutMix", "MixUp"]

LabelsGetter = Callable[[Any], torch.Tensor]


def _default_labels_getter(inputs: Any) -> torch.Tensor:
    """torchvision's rule: the second item of a tuple/list, or a "labels" key of a dict."""
    sample = inputs[0] if len(inputs) == 1 else inputs
    if isinstance(sample, (tuple, list)) and len(sample) >= 2:
        return sample[1]
    if isinstance(sample, Mapping):
        for key in sample:
            if isinstance(key, str) and key.lower() in ("labels", "label"):
                return sample[key]
    raise ValueError(
        "could not find the labels: pass (images, labels), a dict with a 'labels' key, "
        "or a labels_getter"
    )


class _MixBase(Transform):
    def __init__(
        self,
        *,
        alpha: float = 1.0,
        num_classes: int | None = None,
        labels_getter: str | LabelsGetter = "default",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(generator)
        name = type(self).__name__
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not alpha > 0:
            raise ValueError(f"{name}: alpha must be a number > 0, got {alpha!r}")
        if num_classes is not None and (not isinstance(num_classes, int) or num_classes < 1):
            raise ValueError(f"{name}: num_classes must be a positive int, got {num_classes!r}")
        if labels_getter == "default":
            labels_getter = _default_labels_getter
        elif not callable(labels_getter):
            raise TypeError(f"{name}: labels_getter must be 'default' or a callable")
        self.alpha = float(alpha)
        self.num_classes = num_classes
        self._labels_getter = labels_getter

    def _lam(self, device: torch.device) -> torch.Tensor:
        """One Beta(alpha, alpha) sample (0-dim tensor on ``device``)."""
        concentration = torch.full((2,), self.alpha)
        g = self._sample(
            lambda where, **gen: torch._standard_gamma(concentration.to(where), **gen), device
        )
        return g[0] / (g[0] + g[1])

    def _soft_labels(self, labels: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
        name = type(self).__name__
        if labels.ndim == 1:
            if self.num_classes is None:
                raise ValueError(f"{name}: num_classes is needed to one-hot encode 1-D labels")
            if labels.is_floating_point():
                raise TypeError(f"{name}: 1-D labels must be class indices, got {labels.dtype}")
            labels = torch.nn.functional.one_hot(labels.long(), self.num_classes)
        elif self.num_classes is not None and labels.shape[-1] != self.num_classes:
            raise ValueError(
                f"{name}: labels have {labels.shape[-1]} classes, expected {self.num_classes}"
            )
        labels = labels.to(lam.dtype if not labels.is_floating_point() else labels.dtype)
        return labels * lam + labels.roll(1, 0) * (1.0 - lam)

    def _check_images(self, img: torch.Tensor, batch_size: int) -> None:
        name = type(self).__name__
        check_image(name, img)
        if img.ndim != 4:
            raise ValueError(f"{name}: expected a batch [N, C, H, W], got shape {tuple(img.shape)}")
        if img.shape[0] != batch_size:
            raise ValueError(
                f"{name}: {img.shape[0]} images but {batch_size} labels (they must match)"
            )

    def _mix_images(self, img: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        raise NotImplementedError

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        raise NotImplementedError

    def forward(self, *inputs: Any) -> Any:
        """Mix the images and labels found in ``inputs`` (see the class docstring)."""
        name = type(self).__name__
        labels = self._labels_getter(inputs)
        if not isinstance(labels, torch.Tensor) or labels.ndim not in (1, 2):
            raise ValueError(f"{name}: labels must be a 1-D or 2-D tensor, got {labels!r:.60}")
        flat, rebuild = flatten_inputs(self, inputs)
        leaves = [v for x in flat for v in (x.values() if isinstance(x, Mapping) else [x])]
        images = [
            x for x in leaves if isinstance(x, torch.Tensor) and x is not labels and x.ndim >= 3
        ]
        if any(is_pil(x) for x in leaves) or not images:
            raise TypeError(
                f"{name}: expected a batch of image tensors [N, C, H, W] with the labels"
            )
        for img in images:
            self._check_images(img, labels.shape[0])
        params = self.make_params(images)
        mixed_labels = self._soft_labels(labels, params["lam"].to(labels.device))

        def convert(x: Any) -> Any:
            if x is labels:
                return mixed_labels
            if isinstance(x, torch.Tensor) and x.ndim >= 3:
                return self._mix_images(x, params)
            if isinstance(x, Mapping):
                return type(x)({k: convert(v) for k, v in x.items()})
            return x

        return rebuild([convert(x) for x in flat])


def _round_like(mixed: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    if like.is_floating_point():
        return mixed
    return mixed.round_().clamp_(0, _bound(like)).to(like.dtype)


class MixUp(_MixBase):
    """MixUp (Zhang et al., 2017): ``lam * x + (1 - lam) * x_rolled`` for images and labels.

    Works on float, uint8 and uint16 batches (integer results are rounded).

    Example:
        >>> import torch
        >>> images, labels = MixUp(num_classes=3)(torch.rand(2, 3, 4, 4), torch.tensor([0, 2]))
        >>> labels.shape
        torch.Size([2, 3])
    """

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        return {"lam": self._lam(inputs[0].device)}

    def _mix_images(self, img: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        lam = params["lam"].to(img.device)
        x = img if img.is_floating_point() else img.to(torch.float32)
        return _round_like(x * lam + x.roll(1, 0) * (1.0 - lam), img)


class CutMix(_MixBase):
    """CutMix (Yun et al., 2019): paste a box from the rolled batch; labels weighted by area.

    The box is centred at a uniform random pixel with sides ``sqrt(1 - lam)`` of the
    image's, clipped to the image; the label weight is the area actually kept.

    Example:
        >>> import torch
        >>> images, labels = CutMix(num_classes=3)(torch.rand(2, 3, 8, 8), torch.tensor([0, 2]))
        >>> images.shape, labels.shape
        (torch.Size([2, 3, 8, 8]), torch.Size([2, 3]))
    """

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        img = inputs[0]
        height, width = img.shape[-2:]
        device = img.device
        lam = self._lam(device)
        center = self._sample(lambda where, **gen: torch.rand(2, device=where, **gen), device)
        r_x, r_y = (center[0] * width).floor(), (center[1] * height).floor()
        r = 0.5 * torch.sqrt(1.0 - lam)
        half_w, half_h = (r * width).floor(), (r * height).floor()
        x1, x2 = (r_x - half_w).clamp(min=0), (r_x + half_w).clamp(max=width)
        y1, y2 = (r_y - half_h).clamp(min=0), (r_y + half_h).clamp(max=height)
        kept = 1.0 - (x2 - x1) * (y2 - y1) / (width * height)
        return {"lam": kept, "box": torch.stack((x1, y1, x2, y2))}

    def _mix_images(self, img: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        x1, y1, x2, y2 = params["box"].to(img.device).unbind(0)
        rows = torch.arange(img.shape[-2], device=img.device).view(-1, 1)
        cols = torch.arange(img.shape[-1], device=img.device).view(1, -1)
        inside = (rows >= y1) & (rows < y2) & (cols >= x1) & (cols < x2)
        return image_where(inside, img.roll(1, 0), img)
