"""FakeData: random images and labels, the same for the same index as torchvision's.

Example:
    >>> image, label = FakeData(size=2, image_size=(3, 4, 5))[1]
    >>> image.mode, image.size, 0 <= label < 10
    ('RGB', (5, 4), True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from PIL import Image

from trivium.vision.datasets.utils import VisionDataset

__all__ = ["FakeData"]

_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


class FakeData(VisionDataset):
    """``size`` random ``(PIL image, label)`` pairs, torchvision's for the same arguments.

    Sample ``i`` draws a standard-normal ``image_size`` tensor and a label in
    ``[0, num_classes)`` from torch's generator seeded with ``i + random_offset``
    (the global generator's state is restored), then makes a PIL image as
    torchvision's ``ToPILImage`` does (``x * 255`` cast to uint8, wrapping).

    Args:
        size: the number of samples.
        image_size: ``(C, H, W)``, C from 1 to 4.
        num_classes: labels are drawn from ``[0, num_classes)``.
        transform: applied to the image.
        target_transform: applied to the label (a 0-d int64 tensor), whose ``item()``
            is returned, as torchvision does.
        random_offset: added to the index to seed each sample.

    Example:
        >>> ds = FakeData(size=3, image_size=(1, 2, 2), num_classes=2)
        >>> len(ds), ds[0][0].mode
        (3, 'L')
    """

    def __init__(
        self,
        size: int = 1000,
        image_size: tuple[int, int, int] = (3, 224, 224),
        num_classes: int = 10,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        random_offset: int = 0,
    ) -> None:
        super().__init__(transform=transform, target_transform=target_transform)
        if len(image_size) != 3 or image_size[0] not in _MODES:
            raise ValueError(f"image_size must be (C, H, W) with C in 1..4, got {image_size!r}")
        self.size = size
        self.num_classes = num_classes
        self.image_size = image_size
        self.random_offset = random_offset

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        if index >= len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        state = torch.get_rng_state()
        try:
            torch.manual_seed(index + self.random_offset)
            pixels = torch.randn(*self.image_size)
            target = torch.randint(0, self.num_classes, size=(1,), dtype=torch.long)[0]
        finally:
            torch.set_rng_state(state)
        array = pixels.mul(255).byte().permute(1, 2, 0).numpy()
        mode = _MODES[array.shape[2]]
        image = Image.fromarray(
            np.ascontiguousarray(array[:, :, 0] if mode == "L" else array), mode
        )
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target.item()

    def __len__(self) -> int:
        return self.size
