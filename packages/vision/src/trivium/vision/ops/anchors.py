"""Anchor boxes for detection heads, as ``torchvision.models.detection.anchor_utils``.

Example:
    >>> import torch
    >>> gen = AnchorGenerator(sizes=((32,),), aspect_ratios=((0.5, 1.0, 2.0),))
    >>> images = ImageList(torch.zeros(1, 3, 64, 64), [(64, 64)])
    >>> gen(images, [torch.zeros(1, 8, 8, 8)])[0].shape  # 8 x 8 positions x 3 anchors
    torch.Size([192, 4])
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from trivium.vision.ops.image_list import ImageList

__all__ = ["AnchorGenerator", "DefaultBoxGenerator"]


class AnchorGenerator(nn.Module):
    """Anchors at every position of every feature map, as torchvision's ``AnchorGenerator``.

    Feature map i gets ``len(sizes[i]) * len(aspect_ratios[i])`` anchors per position.
    ``sizes[i]`` and ``aspect_ratios[i]`` (height / width) belong to feature map i;
    a flat ``sizes`` means one size per map, and a flat ``aspect_ratios`` the same
    ratios for every map. Each anchor is an ``"xyxy"`` box of area ``size ** 2``
    centred on a position, positions a stride apart, the stride being the image size
    over the feature map's size (integer division). ``forward`` returns one
    ``[sum_i(H_i * W_i * A_i), 4]`` tensor per image: feature map by feature map,
    row-major positions, the anchors of a position consecutive. The same anchors as
    torchvision's, in the same order.

    Example:
        >>> gen = AnchorGenerator(sizes=(16, 32), aspect_ratios=(1.0,))
        >>> gen.num_anchors_per_location()
        [1, 1]
        >>> gen.cell_anchors[1].tolist()
        [[-16.0, -16.0, 16.0, 16.0]]
    """

    def __init__(
        self,
        sizes: Sequence[Sequence[int]] | Sequence[int] = ((128, 256, 512),),
        aspect_ratios: Sequence[Sequence[float]] | Sequence[float] = ((0.5, 1.0, 2.0),),
    ) -> None:
        super().__init__()
        if not isinstance(sizes[0], (list, tuple)):
            sizes = tuple((s,) for s in sizes)
        if not isinstance(aspect_ratios[0], (list, tuple)):
            aspect_ratios = (aspect_ratios,) * len(sizes)
        if len(sizes) != len(aspect_ratios):
            raise ValueError(
                "sizes and aspect_ratios must give one entry per feature map, got "
                f"{len(sizes)} and {len(aspect_ratios)}"
            )
        self.sizes = sizes
        self.aspect_ratios = aspect_ratios
        self.cell_anchors = [
            self.generate_anchors(size, ratios)
            for size, ratios in zip(sizes, aspect_ratios, strict=True)
        ]

    def generate_anchors(
        self,
        scales: Sequence[int],
        aspect_ratios: Sequence[float],
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> Tensor:
        """Zero-centred anchors ``[len(aspect_ratios) * len(scales), 4]``, rounded to integers.

        Example:
            >>> AnchorGenerator().generate_anchors([32], [4.0]).tolist()
            [[-8.0, -32.0, 8.0, 32.0]]
        """
        scales_t = torch.as_tensor(scales, dtype=dtype, device=device)
        ratios_t = torch.as_tensor(aspect_ratios, dtype=dtype, device=device)
        h_ratios = torch.sqrt(ratios_t)
        w_ratios = 1 / h_ratios
        ws = (w_ratios[:, None] * scales_t[None, :]).view(-1)
        hs = (h_ratios[:, None] * scales_t[None, :]).view(-1)
        base_anchors = torch.stack([-ws, -hs, ws, hs], dim=1) / 2
        return base_anchors.round()

    def set_cell_anchors(self, dtype: torch.dtype, device: torch.device | str) -> None:
        """Move the zero-centred anchors to ``dtype`` and ``device``.

        Example:
            >>> import torch
            >>> gen = AnchorGenerator()
            >>> gen.set_cell_anchors(torch.float64, "cpu")
            >>> gen.cell_anchors[0].dtype
            torch.float64
        """
        self.cell_anchors = [a.to(dtype=dtype, device=device) for a in self.cell_anchors]

    def num_anchors_per_location(self) -> list[int]:
        """Anchors per position of each feature map.

        Example:
            >>> AnchorGenerator().num_anchors_per_location()
            [9]
        """
        return [len(s) * len(a) for s, a in zip(self.sizes, self.aspect_ratios, strict=True)]

    def grid_anchors(
        self, grid_sizes: list[list[int]], strides: list[list[Tensor]]
    ) -> list[Tensor]:
        """Every anchor of each feature map of ``grid_sizes`` (H, W) at ``strides`` (y, x).

        Example:
            >>> import torch
            >>> gen = AnchorGenerator(sizes=((2,),), aspect_ratios=((1.0,),))
            >>> gen.grid_anchors([[1, 2]], [[torch.tensor(4), torch.tensor(4)]])[0].tolist()
            [[-1.0, -1.0, 1.0, 1.0], [3.0, -1.0, 5.0, 1.0]]
        """
        if not len(grid_sizes) == len(strides) == len(self.cell_anchors):
            raise ValueError(
                f"got {len(grid_sizes)} feature maps for anchors of {len(self.cell_anchors)} "
                "(sizes and aspect_ratios need one entry per feature map)"
            )
        anchors = []
        for size, stride, base_anchors in zip(grid_sizes, strides, self.cell_anchors, strict=True):
            grid_height, grid_width = size
            stride_height, stride_width = stride
            device = base_anchors.device
            shifts_x = torch.arange(0, grid_width, dtype=torch.int32, device=device) * stride_width
            shifts_y = (
                torch.arange(0, grid_height, dtype=torch.int32, device=device) * stride_height
            )
            shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
            shift_x = shift_x.reshape(-1)
            shift_y = shift_y.reshape(-1)
            shifts = torch.stack((shift_x, shift_y, shift_x, shift_y), dim=1)
            anchors.append((shifts.view(-1, 1, 4) + base_anchors.view(1, -1, 4)).reshape(-1, 4))
        return anchors

    def forward(self, image_list: ImageList, feature_maps: list[Tensor]) -> list[Tensor]:
        """The anchors of every image of ``image_list`` (one tensor per image, all equal).

        Example:
            >>> import torch
            >>> gen = AnchorGenerator(sizes=((8,), (16,)), aspect_ratios=((1.0,), (1.0,)))
            >>> images = ImageList(torch.zeros(2, 3, 32, 32), [(32, 32), (30, 20)])
            >>> maps = [torch.zeros(2, 4, 4, 4), torch.zeros(2, 4, 2, 2)]
            >>> [a.shape[0] for a in gen(images, maps)]
            [20, 20]
        """
        grid_sizes = [feature_map.shape[-2:] for feature_map in feature_maps]
        image_size = image_list.tensors.shape[-2:]
        dtype, device = feature_maps[0].dtype, feature_maps[0].device
        strides = [
            [
                torch.empty((), dtype=torch.int64, device=device).fill_(image_size[0] // g[0]),
                torch.empty((), dtype=torch.int64, device=device).fill_(image_size[1] // g[1]),
            ]
            for g in grid_sizes
        ]
        self.set_cell_anchors(dtype, device)
        anchors_over_all_feature_maps = self.grid_anchors(grid_sizes, strides)
        # One tensor per image, none shared: callers may modify theirs in place.
        return [torch.cat(anchors_over_all_feature_maps) for _ in image_list.image_sizes]


class DefaultBoxGenerator(nn.Module):
    """SSD's default boxes, as ``torchvision.models.detection.anchor_utils.DefaultBoxGenerator``.

    Per feature map ``k``: at each position, a square box of scale ``s_k``, one of
    ``sqrt(s_k * s_{k+1})``, and for each aspect ratio ``r`` the boxes
    ``s_k * (sqrt(r), 1 / sqrt(r))`` and their transpose; scales are fractions of the
    image's side. ``forward`` gives them per image in XYXY pixels.

    Args:
        aspect_ratios: the aspect ratios of each feature map.
        min_ratio: the smallest scale (when ``scales`` is not given)...
        max_ratio: ...and the largest; the scales between are linear, then 1.0.
        scales: the scales of each map and one more (``len(aspect_ratios) + 1``).
        steps: the stride of each map in pixels (default: the image size over the map's).
        clip: clamp the widths and heights to [0, 1] of the image.

    Example:
        >>> import torch
        >>> from trivium.vision.ops import ImageList
        >>> gen = DefaultBoxGenerator([[2], [2, 3]])
        >>> gen.num_anchors_per_location()
        [4, 6]
        >>> images = ImageList(torch.zeros(1, 3, 32, 32), [(32, 32)])
        >>> gen(images, [torch.zeros(1, 4, 4, 4), torch.zeros(1, 4, 2, 2)])[0].shape
        torch.Size([88, 4])
    """

    def __init__(
        self,
        aspect_ratios: list[list[int]],
        min_ratio: float = 0.15,
        max_ratio: float = 0.9,
        scales: list[float] | None = None,
        steps: list[int] | None = None,
        clip: bool = True,
    ) -> None:
        super().__init__()
        if steps is not None and len(aspect_ratios) != len(steps):
            raise ValueError("aspect_ratios and steps should have the same length")
        self.aspect_ratios = aspect_ratios
        self.steps = steps
        self.clip = clip
        num_outputs = len(aspect_ratios)
        if scales is None:
            if num_outputs > 1:
                range_ratio = max_ratio - min_ratio
                self.scales = [
                    min_ratio + range_ratio * k / (num_outputs - 1.0) for k in range(num_outputs)
                ]
                self.scales.append(1.0)
            else:
                self.scales = [min_ratio, max_ratio]
        else:
            if len(scales) != num_outputs + 1:
                raise ValueError(
                    f"scales must have len(aspect_ratios) + 1 = {num_outputs + 1} entries, "
                    f"got {len(scales)}"
                )
            self.scales = scales
        self._wh_pairs = self._generate_wh_pairs(num_outputs)

    def _generate_wh_pairs(
        self,
        num_outputs: int,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> list[Tensor]:
        wh_pairs_per_map: list[Tensor] = []
        for k in range(num_outputs):
            s_k = self.scales[k]
            s_prime_k = math.sqrt(self.scales[k] * self.scales[k + 1])
            wh_pairs = [[s_k, s_k], [s_prime_k, s_prime_k]]
            for ar in self.aspect_ratios[k]:
                sq_ar = math.sqrt(ar)
                w = self.scales[k] * sq_ar
                h = self.scales[k] / sq_ar
                wh_pairs.extend([[w, h], [h, w]])
            wh_pairs_per_map.append(torch.as_tensor(wh_pairs, dtype=dtype, device=device))
        return wh_pairs_per_map

    def num_anchors_per_location(self) -> list[int]:
        """Default boxes per position of each feature map: 2 + 2 per aspect ratio.

        Example:
            >>> DefaultBoxGenerator([[2, 3]]).num_anchors_per_location()
            [6]
        """
        return [2 + 2 * len(r) for r in self.aspect_ratios]

    def _grid_default_boxes(
        self, grid_sizes: list[list[int]], image_size: list[int], dtype: torch.dtype
    ) -> Tensor:
        # (cx, cy, w, h) of every map's boxes, as fractions of the image.
        default_boxes = []
        for k, f_k in enumerate(grid_sizes):
            if self.steps is not None:
                x_f_k = image_size[1] / self.steps[k]
                y_f_k = image_size[0] / self.steps[k]
            else:
                y_f_k, x_f_k = f_k
            shifts_x = ((torch.arange(0, f_k[1]) + 0.5) / x_f_k).to(dtype=dtype)
            shifts_y = ((torch.arange(0, f_k[0]) + 0.5) / y_f_k).to(dtype=dtype)
            shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
            shifts = torch.stack(
                (shift_x.reshape(-1), shift_y.reshape(-1)) * len(self._wh_pairs[k]), dim=-1
            ).reshape(-1, 2)
            wh = self._wh_pairs[k].clamp(min=0, max=1) if self.clip else self._wh_pairs[k]
            default_boxes.append(torch.cat((shifts, wh.repeat(f_k[0] * f_k[1], 1)), dim=1))
        return torch.cat(default_boxes, dim=0)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(aspect_ratios={self.aspect_ratios}, clip={self.clip}, "
            f"scales={self.scales}, steps={self.steps})"
        )

    def forward(self, image_list: ImageList, feature_maps: list[Tensor]) -> list[Tensor]:
        """The default boxes of each image, XYXY in the batch's pixels.

        Example:
            >>> import torch
            >>> from trivium.vision.ops import ImageList
            >>> gen = DefaultBoxGenerator([[]], scales=[0.5, 0.5])
            >>> images = ImageList(torch.zeros(1, 3, 8, 8), [(8, 8)])
            >>> gen(images, [torch.zeros(1, 1, 1, 1)])[0].tolist()
            [[2.0, 2.0, 6.0, 6.0], [2.0, 2.0, 6.0, 6.0]]
        """
        grid_sizes = [list(feature_map.shape[-2:]) for feature_map in feature_maps]
        image_size = list(image_list.tensors.shape[-2:])
        dtype, device = feature_maps[0].dtype, feature_maps[0].device
        boxes = self._grid_default_boxes(grid_sizes, image_size, dtype=dtype).to(device)
        x_y_size = torch.tensor([image_size[1], image_size[0]], device=boxes.device)
        xyxy = torch.cat(
            [
                (boxes[:, :2] - 0.5 * boxes[:, 2:]) * x_y_size,
                (boxes[:, :2] + 0.5 * boxes[:, 2:]) * x_y_size,
            ],
            -1,
        )
        return [xyxy for _ in image_list.image_sizes]
