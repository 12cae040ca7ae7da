"""The input and output transform of detection models (torchvision's GeneralizedRCNNTransform).

Before the backbone, each image is normalised, resized (shorter side to
``min_size``, longer side at most ``max_size``, bilinear) and the batch is padded
to a multiple of ``size_divisible`` into an :class:`~trivium.vision.ops.ImageList`;
target boxes are scaled with their image. After the heads, :meth:`postprocess`
maps the detected boxes back to the input images' sizes. The arithmetic is
torchvision's, op for op, so the numbers are the same.

Example:
    >>> import torch
    >>> t = GeneralizedRCNNTransform(64, 96, [0.5] * 3, [0.25] * 3).eval()
    >>> batch, _ = t([torch.rand(3, 40, 60), torch.rand(3, 50, 50)])
    >>> tuple(batch.tensors.shape), batch.image_sizes
    ((2, 3, 64, 96), [(64, 96), (64, 64)])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from trivium.vision.models.detection.roi_heads import paste_masks_in_image
from trivium.vision.ops import ImageList

__all__ = ["GeneralizedRCNNTransform", "resize_boxes", "resize_keypoints"]


def resize_boxes(boxes: Tensor, original_size: Sequence[int], new_size: Sequence[int]) -> Tensor:
    """XYXY ``boxes`` [N, 4] of an image of ``original_size`` (h, w), scaled to ``new_size``.

    The ratios are float32 divisions, as torchvision's.

    Example:
        >>> import torch
        >>> resize_boxes(torch.tensor([[1.0, 2.0, 3.0, 4.0]]), (10, 20), (20, 10))
        tensor([[0.5000, 4.0000, 1.5000, 8.0000]])
    """
    new = torch.tensor([new_size[1], new_size[0]], dtype=torch.float32, device=boxes.device)
    old = torch.tensor(
        [original_size[1], original_size[0]], dtype=torch.float32, device=boxes.device
    )
    ratio_w, ratio_h = (new / old).unbind()
    xmin, ymin, xmax, ymax = boxes.unbind(1)
    return torch.stack((xmin * ratio_w, ymin * ratio_h, xmax * ratio_w, ymax * ratio_h), dim=1)


def resize_keypoints(
    keypoints: Tensor, original_size: Sequence[int], new_size: Sequence[int]
) -> Tensor:
    """Keypoints ``[N, K, 3]`` (x, y, visibility) of an image of ``original_size``, scaled.

    ``new_size`` is the ``(h, w)`` they are scaled to; float32 ratios, as torchvision's.

    Example:
        >>> import torch
        >>> resize_keypoints(torch.tensor([[[2.0, 3.0, 1.0]]]), (10, 20), (20, 10))
        tensor([[[1., 6., 1.]]])
    """
    new = torch.tensor([new_size[1], new_size[0]], dtype=torch.float32, device=keypoints.device)
    old = torch.tensor(
        [original_size[1], original_size[0]], dtype=torch.float32, device=keypoints.device
    )
    ratio_w, ratio_h = (new / old).unbind()
    resized = keypoints.clone()
    resized[..., 0] *= ratio_w
    resized[..., 1] *= ratio_h
    return resized


def _resize_args(
    image: Tensor, min_size: int, max_size: int, fixed_size: tuple[int, int] | None
) -> dict[str, Any]:
    # torchvision's scale: the float scale factor, the output size recomputed from it.
    if fixed_size is not None:
        return {"size": [fixed_size[1], fixed_size[0]]}
    h, w = image.shape[-2:]
    scale = min(min_size / min(h, w), max_size / max(h, w))
    return {"scale_factor": scale, "recompute_scale_factor": True}


class GeneralizedRCNNTransform(nn.Module):
    """Normalise, resize and batch images (and scale target boxes) for a detection model.

    Args:
        min_size: the shorter side after resizing; a sequence gives one size per
            training image, drawn with torch's generator (evaluation uses the last).
        max_size: the longer side's limit after resizing.
        image_mean: per-channel mean subtracted from the float image in [0, 1].
        image_std: per-channel standard deviation it is divided by.
        size_divisible: the batch's height and width are padded (zeros) to multiples of it.
        fixed_size: (width, height) to resize every image to instead.

    Images must be floating ``[C, H, W]`` tensors; targets are dicts with ``boxes``
    (XYXY, float ``[N, 4]``), optionally ``masks`` (``[N, H, W]``, resized nearest,
    as uint8) and ``keypoints`` (``[N, K, 3]``, scaled), and are copied, never changed
    in place.

    Example:
        >>> import torch
        >>> t = GeneralizedRCNNTransform(32, 64, [0.0] * 3, [1.0] * 3)
        >>> target = {"boxes": torch.tensor([[0.0, 0.0, 8.0, 8.0]])}
        >>> images, targets = t([torch.rand(3, 16, 24)], [target])
        >>> images.image_sizes, targets[0]["boxes"]
        ([(32, 48)], tensor([[ 0.,  0., 16., 16.]]))
    """

    def __init__(
        self,
        min_size: int | Sequence[int],
        max_size: int,
        image_mean: list[float],
        image_std: list[float],
        size_divisible: int = 32,
        fixed_size: tuple[int, int] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if not isinstance(min_size, list | tuple):
            min_size = (min_size,)
        self.min_size = tuple(min_size)
        self.max_size = max_size
        self.image_mean = image_mean
        self.image_std = image_std
        self.size_divisible = size_divisible
        self.fixed_size = fixed_size
        self._skip_resize = kwargs.pop("_skip_resize", False)
        if kwargs:
            raise TypeError(f"GeneralizedRCNNTransform got unexpected arguments {sorted(kwargs)}")

    def forward(
        self, images: list[Tensor], targets: list[dict[str, Tensor]] | None = None
    ) -> tuple[ImageList, list[dict[str, Tensor]] | None]:
        """The padded batch (an ImageList with the resized sizes) and the scaled targets.

        Example:
            >>> import torch
            >>> t = GeneralizedRCNNTransform(32, 32, [0.0] * 3, [1.0] * 3).eval()
            >>> t([torch.zeros(3, 8, 8)])[0].tensors.shape
            torch.Size([1, 3, 32, 32])
        """
        images = list(images)
        if targets is not None:
            if len(targets) != len(images):
                raise ValueError(f"got {len(images)} images but {len(targets)} targets")
            targets = [dict(t) for t in targets]
        for i, image in enumerate(images):
            if not isinstance(image, Tensor) or image.dim() != 3:
                shape = tuple(image.shape) if isinstance(image, Tensor) else type(image).__name__
                raise ValueError(
                    f"images is expected to be a list of 3d tensors of shape [C, H, W], "
                    f"got {shape} at index {i}"
                )
            target = targets[i] if targets is not None else None
            images[i], target = self.resize(self.normalize(image), target)
            if targets is not None and target is not None:
                targets[i] = target
        image_sizes = [(int(img.shape[-2]), int(img.shape[-1])) for img in images]
        batch = self.batch_images(images, size_divisible=self.size_divisible)
        return ImageList(batch, image_sizes), targets

    def normalize(self, image: Tensor) -> Tensor:
        """``(image - mean) / std`` per channel; the image must be floating point.

        Example:
            >>> import torch
            >>> t = GeneralizedRCNNTransform(8, 8, [0.5, 0.5, 0.5], [0.5, 0.5, 0.5])
            >>> t.normalize(torch.ones(3, 1, 1)).flatten()
            tensor([1., 1., 1.])
        """
        if not image.is_floating_point():
            raise TypeError(
                "Expected input images to be of floating type (in range [0, 1]), "
                f"but found type {image.dtype} instead"
            )
        dtype, device = image.dtype, image.device
        mean = torch.as_tensor(self.image_mean, dtype=dtype, device=device)
        std = torch.as_tensor(self.image_std, dtype=dtype, device=device)
        return (image - mean[:, None, None]) / std[:, None, None]

    def torch_choice(self, k: Sequence[int]) -> int:
        """One of ``k``, drawn with torch's global generator (as torchvision's).

        Example:
            >>> GeneralizedRCNNTransform(8, 8, [0.0], [1.0]).torch_choice([5])
            5
        """
        index = int(torch.empty(1).uniform_(0.0, float(len(k))).item())
        return k[index]

    def resize(
        self, image: Tensor, target: dict[str, Tensor] | None = None
    ) -> tuple[Tensor, dict[str, Tensor] | None]:
        """The resized image, and the target with its boxes scaled alike.

        Example:
            >>> import torch
            >>> t = GeneralizedRCNNTransform(20, 100, [0.0], [1.0]).eval()
            >>> t.resize(torch.zeros(1, 10, 30))[0].shape
            torch.Size([1, 20, 60])
        """
        h, w = image.shape[-2:]
        if self.training:
            if self._skip_resize:
                return image, target
            size = self.torch_choice(self.min_size)
        else:
            size = self.min_size[-1]
        args = _resize_args(image, size, self.max_size, self.fixed_size)
        image = nn.functional.interpolate(
            image[None], mode="bilinear", align_corners=False, **args
        )[0]
        if target is None:
            return image, target
        target = dict(target)
        target["boxes"] = resize_boxes(target["boxes"], (h, w), image.shape[-2:])
        if "masks" in target:  # nearest, as uint8, as torchvision's
            masks = target["masks"][:, None].float()
            target["masks"] = nn.functional.interpolate(masks, **args)[:, 0].byte()
        if "keypoints" in target:
            target["keypoints"] = resize_keypoints(target["keypoints"], (h, w), image.shape[-2:])
        return image, target

    def max_by_axis(self, the_list: list[list[int]]) -> list[int]:
        """The elementwise maximum of lists of equal length.

        Example:
            >>> GeneralizedRCNNTransform(8, 8, [0.0], [1.0]).max_by_axis([[1, 5], [3, 2]])
            [3, 5]
        """
        return [max(column) for column in zip(*the_list, strict=True)]

    def batch_images(self, images: list[Tensor], size_divisible: int = 32) -> Tensor:
        """``images`` zero-padded (bottom and right) to one size divisible by ``size_divisible``.

        Example:
            >>> import torch
            >>> t = GeneralizedRCNNTransform(8, 8, [0.0], [1.0])
            >>> t.batch_images([torch.ones(1, 3, 5), torch.ones(1, 4, 2)], 4).shape
            torch.Size([2, 1, 4, 8])
        """
        max_size = self.max_by_axis([list(img.shape) for img in images])
        stride = float(size_divisible)
        max_size[1] = int(math.ceil(float(max_size[1]) / stride) * stride)
        max_size[2] = int(math.ceil(float(max_size[2]) / stride) * stride)
        batched = images[0].new_zeros([len(images), *max_size])
        for i, img in enumerate(images):
            batched[i, : img.shape[0], : img.shape[1], : img.shape[2]].copy_(img)
        return batched

    def postprocess(
        self,
        result: list[dict[str, Tensor]],
        image_shapes: list[tuple[int, int]],
        original_image_sizes: list[tuple[int, int]],
    ) -> list[dict[str, Tensor]]:
        """Detections with their ``boxes`` mapped from the resized to the input image sizes.

        ``keypoints`` are scaled alike, and ``masks`` (box-relative, from Mask R-CNN)
        pasted into the input image's size.

        In training mode ``result`` is returned as it is.

        Example:
            >>> import torch
            >>> t = GeneralizedRCNNTransform(8, 8, [0.0], [1.0]).eval()
            >>> t.postprocess([{"boxes": torch.tensor([[2., 2., 4., 4.]])}], [(8, 8)], [(4, 4)])
            [{'boxes': tensor([[1., 1., 2., 2.]])}]
        """
        if self.training:
            return result
        for pred, im_s, o_im_s in zip(result, image_shapes, original_image_sizes, strict=True):
            pred["boxes"] = resize_boxes(pred["boxes"], im_s, o_im_s)
            if "masks" in pred:
                pred["masks"] = paste_masks_in_image(pred["masks"], pred["boxes"], o_im_s)
            if "keypoints" in pred:
                pred["keypoints"] = resize_keypoints(pred["keypoints"], im_s, o_im_s)
        return result

    def __repr__(self) -> str:
        indent = "\n    "
        return (
            f"{type(self).__name__}("
            f"{indent}Normalize(mean={self.image_mean}, std={self.image_std})"
            f"{indent}Resize(min_size={self.min_size}, max_size={self.max_size}, mode='bilinear')"
            "\n)"
        )


def _imagenet_transform(
    min_size: Any,
    max_size: int,
    image_mean: list[float] | None,
    image_std: list[float] | None,
    **kwargs: Any,
) -> GeneralizedRCNNTransform:
    """A detector's :class:`GeneralizedRCNNTransform`, normalising with ImageNet's mean and
    standard deviation where ``image_mean`` / ``image_std`` are None.

    Example:
        >>> _imagenet_transform(64, 96, None, [1.0, 1.0, 1.0]).image_mean
        [0.485, 0.456, 0.406]
    """
    return GeneralizedRCNNTransform(
        min_size,
        max_size,
        [0.485, 0.456, 0.406] if image_mean is None else image_mean,
        [0.229, 0.224, 0.225] if image_std is None else image_std,
        **kwargs,
    )
