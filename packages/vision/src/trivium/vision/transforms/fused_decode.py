"""Fused decode-and-crop: decode only the pixels a crop keeps, at the smallest DCT scale it needs.

``DecodeRandomResizedCrop``, ``DecodeResize`` and ``DecodeCenterCrop`` take
*encoded* images (bytes, a uint8 tensor or array of the file's bytes, or a list of
them) and give what decoding then applying ``RandomResizedCrop``, ``Resize`` or
``CenterCrop`` gives, much faster for JPEG:

1. the crop is sampled from the header's height and width (the same box the
   unfused transform draws from the same generator state);
2. libjpeg-turbo decodes only that region: rows above it are skipped, rows below
   it are never entropy-decoded (decoding stops after the crop's last row) and
   columns outside it skip the inverse DCT;
3. at the smallest of the fast DCT scales (1/8, 1/4, 1/2) whose output still
   covers the requested size with a 50% margin (only when the resize is
   antialiased: the scaled IDCT is an area filter, and the margin keeps the
   resize's filter the dominant one);
4. the (much smaller) region is resized to the output size.

Other formats (PNG), and JPEGs deeper than 8 bits, take the unfused path: full
decode, then the transform. The result is what ``decode_image`` then the transform
gives: uint8 for 8-bit files, uint16 for 16-bit PNGs and 12-bit or lossless JPEGs
(``dtype=`` decodes every file to one dtype instead, as ``decode_image``'s does). An
already decoded image tensor ``[C, H, W]`` is taken too: the transform then runs on
it as it is (``ImageFolder`` passes such tensors for the files it converts).
A list of inputs gives a batch ``[N, C, H, W]`` in channels-last memory (the
decoder's pixel order): boxes are drawn in order, then the images are decoded in
parallel on the ``trivium.core`` thread pool, each resized straight into its slot
of the batch (inside a DataLoader worker the batch is in shared memory: sending it
copies nothing). A batch has one dtype: a list mixing 8-bit and deeper files (with
``dtype=None``) raises ``ValueError`` naming the first item that differs.

Under ``torch.compile`` (``fullgraph=True`` too) each transform runs as one custom
op (``trivium::decode_center_crop``, ``trivium::decode_resize``,
``trivium::decode_random_resized_crop``): the header, the plan and the decode
depend on the file's bytes, so they run inside the op, the same code as in eager
mode. ``DecodeResize`` and ``DecodeCenterCrop`` give exactly the eager output;
``DecodeRandomResizedCrop`` draws its uniforms in the graph from torch's default
generator (as ``RandomResizedCrop`` does under compile: seed with
``torch.manual_seed``, the ``generator`` is not used there) and turns them into a
box with ``random_resized_crop_boxes``. Inputs must then be uint8 tensors of the
encoded bytes (not bytes or arrays), or decoded image tensors (all of a list), which
go through the unfused transform. The output dtype must be known before decoding
there, as for ``decode_image``: uint8 unless ``dtype`` says otherwise, and a deeper
file with ``dtype=None`` raises ``TypeError``.

Example:
    >>> import torch
    >>> from trivium.vision.io import encode_jpeg
    >>> data = encode_jpeg(torch.zeros(3, 480, 640, dtype=torch.uint8))
    >>> crop = DecodeRandomResizedCrop(224, generator=torch.Generator().manual_seed(0))
    >>> crop(data).shape, crop([data, data]).shape
    (torch.Size([3, 224, 224]), torch.Size([2, 3, 224, 224]))
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from trivium.core import Transform, empty_batch, stack_batch
from trivium.core.threads import parallel_map
from trivium.core.tracing import is_tracing
from trivium.vision.io import ImageReadMode, decode_image, image_info
from trivium.vision.io.image.codec import as_buffer, resolve_max_pixels
from trivium.vision.io.image.kernels import decode_buffer
from trivium.vision.io.image.ops import check_traceable
from trivium.vision.transforms import functional as F
from trivium.vision.transforms.functional.geometry import _channels_last_batch, _resize_image
from trivium.vision.transforms.geometry import (
    CenterCrop,
    RandomResizedCrop,
    Resize,
    random_resized_crop_boxes,
)
from trivium.vision.transforms.interpolation import InterpolationMode

__all__ = ["DecodeCenterCrop", "DecodePlan", "DecodeRandomResizedCrop", "DecodeResize"]

Encoded = bytes | bytearray | memoryview | np.ndarray | torch.Tensor


@dataclass(frozen=True)
class DecodePlan:
    """What a fused transform will do with one encoded image (see ``plan``).

    ``box`` is (top, left, height, width) in the full image's pixels (None: the
    whole image); ``eighths`` is the DCT scale M/8 used; ``size`` the output
    (height, width); ``fused`` is False where the unfused path runs (not an 8-bit
    JPEG, an image tensor, or a crop the region decode cannot serve); ``dtype`` the
    output's.

    Example:
        >>> DecodePlan(b"", (0, 0, 8, 8), 8, (4, 4), True).eighths
        8
    """

    data: Any
    box: tuple[int, int, int, int] | None
    eighths: int
    size: tuple[int, int]
    fused: bool
    dtype: torch.dtype = torch.uint8


def _is_jpeg(info: Any) -> bool:
    # 12-bit and lossless JPEGs take the unfused path, as 16-bit PNGs do.
    return info.format == "jpeg" and info.bit_depth == 8 and not info.lossless


def _is_decoded(data: Any) -> bool:
    """Whether ``data`` is an image tensor ``[..., C, H, W]`` rather than encoded bytes."""
    return isinstance(data, torch.Tensor) and data.ndim >= 3


def _trim_to_box(region: torch.Tensor, box: Sequence[int], eighths: int) -> torch.Tensor:
    """Cut a scaled region decode down to the box, its edges rounded to whole scaled pixels.

    ``decode_jpeg`` widens a scaled region outwards (start floored, end rounded up);
    rounding both edges to the nearest scaled pixel moves them by at most half a
    scaled pixel, which ``SCALE_MARGIN`` keeps to a third of an output pixel.
    """
    if eighths == 8:
        return region
    s = eighths / 8
    top, left, height, width = box
    first_row, first_col = math.floor(top * s), math.floor(left * s)
    row0, col0 = round(top * s) - first_row, round(left * s) - first_col
    row1 = max(round((top + height) * s) - first_row, row0 + 1)
    col1 = max(round((left + width) * s) - first_col, col0 + 1)
    return region[..., row0:row1, col0:col1]


class _FusedDecode(Transform):
    """Shared plumbing: one input or a list, plan in order, decode in parallel."""

    def __init__(
        self,
        mode: ImageReadMode,
        apply_exif_orientation: bool,
        generator: torch.Generator | None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(generator)
        self.mode = ImageReadMode(mode)
        self.apply_exif_orientation = bool(apply_exif_orientation)
        if dtype is not None and not isinstance(dtype, torch.dtype):
            raise TypeError(f"{type(self).__name__}: dtype must be a torch.dtype or None")
        self.dtype = dtype

    def forward(self, data: Encoded | Sequence[Encoded]) -> torch.Tensor | list[torch.Tensor]:
        """Decode and transform one encoded image, or a list of them into a batch.

        A decoded image tensor (alone or in the list) goes through the unfused transform.

        Example:
            >>> import torch
            >>> from trivium.vision.io import encode_png
            >>> DecodeCenterCrop(4)(encode_png(torch.zeros(3, 8, 8, dtype=torch.uint8))).shape
            torch.Size([3, 4, 4])
        """
        if is_tracing():
            return self._traced(data)
        if isinstance(data, list | tuple):
            plans = [self.plan(item) for item in data]  # draws happen in input order
            return self._decode_all(plans)
        return self.execute(self.plan(data))

    def _traced(self, data: Encoded | Sequence[Encoded]) -> Any:
        """Inside ``torch.compile``: this transform's custom op on a list of encoded tensors."""
        many = isinstance(data, list | tuple)
        items = list(data) if many else [data]
        name = type(self).__name__
        if not items:
            raise ValueError(f"{name}: expected at least one encoded image, got an empty list")
        decoded = [_is_decoded(item) for item in items]
        if all(decoded):
            return self._traced_unfused(items) if many else self._unfused_step(data)
        if any(decoded):
            raise TypeError(
                f"{name}: inside torch.compile a list holds encoded images only or decoded "
                "image tensors only"
            )
        for item in items:
            check_traceable(item, name)
        result = self._op(items)
        return result if many else result[0]

    def _traced_unfused(self, images: list[torch.Tensor]) -> Any:
        """Inside ``torch.compile``: the unfused transform of each decoded image, as a batch."""
        return torch.stack([self._unfused_step(image) for image in images])

    def _unfused_step(self, image: torch.Tensor) -> torch.Tensor:
        """The unfused transform (a module) applied to a decoded image."""
        raise NotImplementedError(f"{type(self).__name__} must implement _unfused_step")

    def _op(self, items: list[torch.Tensor]) -> Any:
        """This transform's custom op on ``items`` (each subclass calls its own)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _op")

    def _decode_all(self, plans: list[DecodePlan]) -> torch.Tensor | list[torch.Tensor]:
        """The decoded images of ``plans``: one batch (see :meth:`_batch`)."""
        return self._batch(plans)

    def _batch(self, plans: list[DecodePlan]) -> torch.Tensor:
        """Decode the plans into one channels-last batch, each image written into its slot."""
        self._check_one_dtype(plans)
        channels = self.mode.channels
        sizes = {plan.size for plan in plans}
        if channels is None or len(sizes) != 1 or any(_is_decoded(plan.data) for plan in plans):
            return stack_batch(parallel_map(self.execute, plans))  # no one shape known ahead
        ((height, width),) = sizes
        batch = empty_batch((len(plans), height, width, channels), plans[0].dtype)
        batch = batch.permute(0, 3, 1, 2)
        parallel_map(lambda i: self.execute(plans[i], out=batch[i]), range(len(plans)))
        return batch

    def _check_one_dtype(self, plans: list[DecodePlan]) -> None:
        """A ``ValueError`` naming the first item whose dtype differs from the first item's."""
        for i, plan in enumerate(plans):
            if plan.dtype != plans[0].dtype:
                raise ValueError(
                    f"{type(self).__name__}: a batch has one dtype, but item 0 gives "
                    f"{plans[0].dtype} and item {i} gives {plan.dtype} (8-bit and deeper "
                    "images in one list); pass dtype=torch.uint8 or dtype=torch.uint16 to "
                    "decode them all to one"
                )

    def plan(self, data: Encoded | torch.Tensor) -> DecodePlan:
        """Read the header and draw the random parameters, without decoding pixels.

        A decoded image tensor is planned from its own size, for the unfused path.

        Example:
            >>> import torch
            >>> from trivium.vision.io import encode_jpeg
            >>> data = encode_jpeg(torch.zeros(3, 64, 64, dtype=torch.uint8))
            >>> DecodeResize(16).plan(data).eighths
            4
        """
        if _is_decoded(data):
            plan = self._plan(data, data.shape[-2], data.shape[-1], False)
            return dataclasses.replace(plan, dtype=data.dtype)
        data, height, width, fusable, dtype = self._header(data)
        return dataclasses.replace(self._plan(data, height, width, fusable), dtype=dtype)

    def _header(self, data: Encoded) -> tuple[Any, int, int, bool, torch.dtype]:
        """The buffer, the height and width the transform sees, whether it can fuse, the dtype.

        The dtype is ``self.dtype``, else the file's own (uint16 deeper than 8 bits);
        only uint8 output of an 8-bit JPEG takes the fused path.
        """
        data = as_buffer(data, type(self).__name__)  # converted once, read twice
        info = image_info(data)
        orientation_matters = self.apply_exif_orientation and info.orientation not in (0, 1)
        if orientation_matters:  # the box is drawn in the rotated frame: decode it all
            height, width = (
                (info.width, info.height)
                if info.orientation >= 5
                else (
                    info.height,
                    info.width,
                )
            )
        else:
            height, width = info.height, info.width
        dtype = info.dtype if self.dtype is None else self.dtype
        fusable = _is_jpeg(info) and not orientation_matters and dtype == torch.uint8
        return data, height, width, fusable, dtype

    def execute(self, plan: DecodePlan, out: torch.Tensor | None = None) -> torch.Tensor:
        """Decode and transform following a plan from :meth:`plan` (into ``out`` if given).

        Example:
            >>> import torch
            >>> from trivium.vision.io import encode_jpeg
            >>> t = DecodeCenterCrop(8)
            >>> t.execute(t.plan(encode_jpeg(torch.zeros(3, 32, 32, dtype=torch.uint8)))).shape
            torch.Size([3, 8, 8])
        """
        if _is_decoded(plan.data):
            result = self._unfused(plan.data, plan)
        elif not plan.fused:
            image = decode_image(
                plan.data, self.mode, self.apply_exif_orientation, dtype=plan.dtype
            )
            result = self._unfused(image, plan)
        else:
            limit = resolve_max_pixels(...)
            region = decode_buffer(plan.data, self.mode, plan.eighths, plan.box, None, limit)
            result = self._finish(region, plan, out)
        return result if out is None or result is out else out.copy_(result)

    # Subclasses fill these in.

    def _plan(self, data: Encoded, height: int, width: int, jpeg: bool) -> DecodePlan:
        raise NotImplementedError

    def _unfused(self, image: torch.Tensor, plan: DecodePlan) -> torch.Tensor:
        raise NotImplementedError

    def _finish(
        self, region: torch.Tensor, plan: DecodePlan, out: torch.Tensor | None
    ) -> torch.Tensor:
        raise NotImplementedError


# A scale whose output only just covers the requested size would leave the scaled
# IDCT (a box filter) as the whole low-pass, visibly sharper than an antialiased
# resize, and the box edges rounded to whole scaled pixels could move by half an
# output pixel. Covering 1.5x the size makes both small (PSNR > 36 dB on photos).
SCALE_MARGIN = 1.5


# libjpeg-turbo has SIMD inverse DCTs for 1/8, 1/4, 1/2 and full size only: the
# other scales (3/8, 5/8 ...) run plain C and decode slower than full size.
FAST_EIGHTHS = (1, 2, 4, 8)


def _eighths_for(height: int, width: int, size: Sequence[int]) -> int:
    """The smallest fast scale M/8 at which (height, width) covers ``SCALE_MARGIN`` x ``size``."""
    need_h, need_w = (math.ceil(v * SCALE_MARGIN) for v in size)
    for m in FAST_EIGHTHS:
        if math.ceil(height * m / 8) >= need_h and math.ceil(width * m / 8) >= need_w:
            return m
    return 8


# torch's antialiased uint8 kernels, which can write into a slot of a batch.
_AA_KERNELS = {
    InterpolationMode.BILINEAR: torch._C._nn._upsample_bilinear2d_aa,
    InterpolationMode.BICUBIC: torch._C._nn._upsample_bicubic2d_aa,
}


def _resize_region(
    region: torch.Tensor,
    plan: DecodePlan,
    interpolation: InterpolationMode,
    antialias: bool,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Resize a region decoded for ``plan`` to the plan's output size (into ``out`` if it can).

    ``out`` is a ``[C, H, W]`` uint8 CPU slot of a channels-last batch (the decoder's
    output is uint8 on the CPU too): torch's antialiased kernel then writes there
    directly, saving a copy of each image into the batch.
    """
    region = _trim_to_box(region, plan.box, plan.eighths)
    kernel = _AA_KERNELS.get(interpolation) if antialias else None
    if kernel is None or tuple(region.shape[-2:]) == plan.size:
        return _resize_image(region, plan.size[0], plan.size[1], interpolation.value, antialias)
    x = _channels_last_batch(region[None])  # the kernel F.interpolate would call, called directly
    if out is None:
        return kernel(x, list(plan.size), False, None, None)[0]
    kernel(x, list(plan.size), False, None, None, out=_channels_last_batch(out[None]))
    return out


def _scales_with_antialias(interpolation: InterpolationMode, antialias: bool) -> bool:
    """Whether a DCT-scaled decode stands in for part of the resize (an area pre-filter)."""
    return antialias and interpolation in (InterpolationMode.BILINEAR, InterpolationMode.BICUBIC)


class DecodeRandomResizedCrop(_FusedDecode):
    """``RandomResizedCrop`` on encoded images, decoding only the crop (see the module).

    Arguments are ``RandomResizedCrop``'s, plus ``mode`` (default RGB),
    ``apply_exif_orientation`` and ``dtype`` (None: the file's own) for the decode.
    With the same generator state it draws the same box as ``RandomResizedCrop`` on
    the decoded image; the output differs from that path only by the DCT scaling of
    8-bit JPEGs (PSNR well above 30 dB), and equals it for every other input.

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_jpeg
        >>> data = encode_jpeg(torch.full((3, 300, 400), 90, dtype=torch.uint8))
        >>> DecodeRandomResizedCrop((64, 48))(data).shape
        torch.Size([3, 64, 48])
    """

    def __init__(
        self,
        size: int | Sequence[int],
        scale: tuple[float, float] = (0.08, 1.0),
        ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
        interpolation: InterpolationMode = InterpolationMode.BILINEAR,
        antialias: bool = True,
        *,
        mode: ImageReadMode = ImageReadMode.RGB,
        apply_exif_orientation: bool = False,
        dtype: torch.dtype | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(mode, apply_exif_orientation, generator, dtype)
        self.crop = RandomResizedCrop(
            size, scale, ratio, interpolation, antialias, generator=generator
        )

    def _plan(self, data: Encoded, height: int, width: int, jpeg: bool) -> DecodePlan:
        return self._plan_box(data, self.crop.sample_box(height, width), jpeg)

    def _plan_drawn(self, data: Encoded, u: torch.Tensor) -> DecodePlan:
        """The plan for a box made of uniforms ``u`` [10, 4] (the compiled path's draws)."""
        data, height, width, fusable, dtype = self._header(data)
        boxes = random_resized_crop_boxes(u[None], height, width, self.crop.scale, self.crop.ratio)
        plan = self._plan_box(data, tuple(int(v) for v in boxes), fusable)
        return dataclasses.replace(plan, dtype=dtype)

    def _unfused_step(self, image: torch.Tensor) -> torch.Tensor:
        return self.crop(image)

    def _op(self, items: list[torch.Tensor]) -> torch.Tensor:
        # RandomResizedCrop's draws under compile: uniforms from the default generator.
        u = self.crop._draw((len(items), 10, 4))
        crop = self.crop
        return _decode_random_resized_crop_op(
            items,
            u,
            list(crop.size),
            list(crop.scale),
            list(crop.ratio),
            crop.interpolation.value,
            crop.antialias,
            int(self.mode),
            self.apply_exif_orientation,
            self.dtype,
        )

    def _plan_box(self, data: Encoded, box: Sequence[int], jpeg: bool) -> DecodePlan:
        box = tuple(box)
        size = tuple(self.crop.size)
        eighths = 8
        if jpeg and _scales_with_antialias(self.crop.interpolation, self.crop.antialias):
            eighths = _eighths_for(box[2], box[3], size)
        return DecodePlan(data, box, eighths, size, jpeg)

    def _unfused(self, image: torch.Tensor, plan: DecodePlan) -> torch.Tensor:
        region = F.crop_image(image, *plan.box)
        return F.resize_image(
            region, list(plan.size), self.crop.interpolation, antialias=self.crop.antialias
        )

    def _finish(
        self, region: torch.Tensor, plan: DecodePlan, out: torch.Tensor | None
    ) -> torch.Tensor:
        return _resize_region(region, plan, self.crop.interpolation, self.crop.antialias, out)


class DecodeResize(_FusedDecode):
    """``Resize`` on encoded images, decoding JPEGs at the smallest DCT scale that serves it.

    Arguments are ``Resize``'s, plus ``mode``, ``apply_exif_orientation`` and ``dtype``
    for the decode (as :class:`DecodeRandomResizedCrop`'s).

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_jpeg
        >>> data = encode_jpeg(torch.zeros(3, 480, 640, dtype=torch.uint8))
        >>> DecodeResize(120)(data).shape
        torch.Size([3, 120, 160])
    """

    def __init__(
        self,
        size: int | Sequence[int],
        interpolation: InterpolationMode = InterpolationMode.BILINEAR,
        max_size: int | None = None,
        antialias: bool = True,
        *,
        mode: ImageReadMode = ImageReadMode.RGB,
        apply_exif_orientation: bool = False,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(mode, apply_exif_orientation, None, dtype)
        self.resize = Resize(size, interpolation, max_size, antialias)

    def forward(self, data: Encoded | Sequence[Encoded]) -> torch.Tensor | list[torch.Tensor]:
        """Decode and resize one encoded image, or a list (a list out: sizes may differ).

        Example:
            >>> import torch
            >>> from trivium.vision.io import encode_jpeg
            >>> data = encode_jpeg(torch.zeros(3, 40, 80, dtype=torch.uint8))
            >>> [t.shape for t in DecodeResize(20)([data])]
            [torch.Size([3, 20, 40])]
        """
        return super().forward(data)

    def _decode_all(self, plans: list[DecodePlan]) -> list[torch.Tensor]:
        """The decoded images of ``plans``, as a list (their sizes and dtypes may differ)."""
        return parallel_map(self.execute, plans)

    def _traced_unfused(self, images: list[torch.Tensor]) -> list[torch.Tensor]:
        return [self.resize(image) for image in images]

    def _unfused_step(self, image: torch.Tensor) -> torch.Tensor:
        return self.resize(image)

    def _op(self, items: list[torch.Tensor]) -> list[torch.Tensor]:
        resize = self.resize
        return _decode_resize_op(
            items,
            resize.size,
            resize.interpolation.value,
            resize.max_size,
            resize.antialias,
            int(self.mode),
            self.apply_exif_orientation,
            self.dtype,
        )

    def _plan(self, data: Encoded, height: int, width: int, jpeg: bool) -> DecodePlan:
        size = tuple(self.resize.output_size(height, width))
        eighths = 8
        if jpeg and _scales_with_antialias(self.resize.interpolation, self.resize.antialias):
            eighths = _eighths_for(height, width, size)
        return DecodePlan(data, (0, 0, height, width), eighths, size, jpeg)

    def _unfused(self, image: torch.Tensor, plan: DecodePlan) -> torch.Tensor:
        return F.resize_image(
            image, list(plan.size), self.resize.interpolation, antialias=self.resize.antialias
        )

    def _finish(
        self, region: torch.Tensor, plan: DecodePlan, out: torch.Tensor | None
    ) -> torch.Tensor:
        return _resize_region(region, plan, self.resize.interpolation, self.resize.antialias, out)


class DecodeCenterCrop(_FusedDecode):
    """``CenterCrop`` on encoded images: a JPEG decodes only the crop, bit-exact.

    A crop larger than the image takes the unfused path (which pads, as
    ``CenterCrop`` does). ``mode``, ``apply_exif_orientation`` and ``dtype`` are for
    the decode (as :class:`DecodeRandomResizedCrop`'s).

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_jpeg
        >>> DecodeCenterCrop((10, 20))(encode_jpeg(torch.zeros(3, 64, 64, dtype=torch.uint8))).shape
        torch.Size([3, 10, 20])
    """

    def __init__(
        self,
        size: int | Sequence[int],
        *,
        mode: ImageReadMode = ImageReadMode.RGB,
        apply_exif_orientation: bool = False,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(mode, apply_exif_orientation, None, dtype)
        self.center_crop = CenterCrop(size)

    def _op(self, items: list[torch.Tensor]) -> torch.Tensor:
        size = list(self.center_crop.size)
        return _decode_center_crop_op(
            items, size, int(self.mode), self.apply_exif_orientation, self.dtype
        )

    def _unfused_step(self, image: torch.Tensor) -> torch.Tensor:
        return self.center_crop(image)

    def _plan(self, data: Encoded, height: int, width: int, jpeg: bool) -> DecodePlan:
        crop_h, crop_w = self.center_crop.size
        inside = crop_h <= height and crop_w <= width
        top = round((height - crop_h) / 2.0)
        left = round((width - crop_w) / 2.0)
        return DecodePlan(data, (top, left, crop_h, crop_w), 8, (crop_h, crop_w), jpeg and inside)

    def _unfused(self, image: torch.Tensor, plan: DecodePlan) -> torch.Tensor:
        return self.center_crop(image)

    def _finish(
        self, region: torch.Tensor, plan: DecodePlan, out: torch.Tensor | None
    ) -> torch.Tensor:
        return region


# The custom ops of the compiled path. Each runs the eager code of its transform on
# plain arguments; outputs are [..., C, H, W] views of [..., H, W, C] memory (the
# decoder's order), as the fake kernels promise.

_CENTER_CROP_SCHEMA = (
    "(Tensor[] data, int[] size, int mode, bool apply_exif_orientation, ScalarType? dtype=None) "
    "-> Tensor"
)
_RESIZE_SCHEMA = (
    "(Tensor[] data, int[]? size, str interpolation, int? max_size, bool antialias, int mode, "
    "bool apply_exif_orientation, ScalarType? dtype=None) -> Tensor[]"
)
_RANDOM_RESIZED_CROP_SCHEMA = (
    "(Tensor[] data, Tensor draws, int[] size, float[] scale, float[] ratio, "
    "str interpolation, bool antialias, int mode, bool apply_exif_orientation, "
    "ScalarType? dtype=None) -> Tensor"
)


def _hwc_strides(shape: Sequence[int]) -> tuple[int, ...]:
    *lead, c, h, w = shape
    strides = [1, w * c, c]
    step = h * w * c
    for n in reversed(lead):
        strides.insert(0, step)
        step *= n
    return tuple(strides)


def _hwc_layout(image: torch.Tensor) -> torch.Tensor:
    """``image`` [..., C, H, W] over [..., H, W, C] memory (copied only when it is not)."""
    if image.stride() == _hwc_strides(image.shape):
        return image
    memory = torch.empty(image.movedim(-3, -1).shape, dtype=image.dtype, device=image.device)
    return memory.movedim(-1, -3).copy_(image)


def _fake_images(
    shape: Sequence[Any], like: torch.Tensor, dtype: torch.dtype | None
) -> torch.Tensor:
    hwc_shape = (*shape[:-3], shape[-2], shape[-1], shape[-3])
    hwc = like.new_empty(hwc_shape, dtype=torch.uint8 if dtype is None else dtype, device="cpu")
    return hwc.movedim(-1, -3)


def _traced_plans(
    transform: _FusedDecode, data: list[torch.Tensor], dtype: torch.dtype | None
) -> list[DecodePlan]:
    """``transform``'s plans of ``data``; a file deeper than 8 bits with ``dtype=None`` raises.

    The op's output dtype must be known before decoding (the fake kernel's uint8),
    as for ``decode_image`` inside ``torch.compile``.
    """
    plans = [transform.plan(item) for item in data]
    _check_traced_dtype(transform, plans, dtype)
    return plans


def _check_traced_dtype(
    transform: _FusedDecode, plans: list[DecodePlan], dtype: torch.dtype | None
) -> None:
    for i, plan in enumerate(plans):
        if dtype is None and plan.dtype != torch.uint8:
            raise TypeError(
                f"{type(transform).__name__}: item {i} decodes to {plan.dtype}, and inside "
                "torch.compile the output dtype must be known before decoding: pass "
                "dtype= (e.g. dtype=torch.uint16) to the transform"
            )


def _channels(mode: int) -> Any:
    channels = ImageReadMode(mode).channels
    return torch.library.get_ctx().new_dynamic_size(min=1, max=4) if channels is None else channels


@torch.library.custom_op("trivium::decode_center_crop", mutates_args=(), schema=_CENTER_CROP_SCHEMA)
def _decode_center_crop_op(
    data: list[torch.Tensor],
    size: list[int],
    mode: int,
    apply_exif_orientation: bool,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """``DecodeCenterCrop(size, ...)`` of a list of encoded images, as a batch."""
    transform = DecodeCenterCrop(
        size, mode=ImageReadMode(mode), apply_exif_orientation=apply_exif_orientation, dtype=dtype
    )
    return _hwc_layout(transform._decode_all(_traced_plans(transform, data, dtype)))


@_decode_center_crop_op.register_fake
def _(data, size, mode, apply_exif_orientation, dtype=None):
    return _fake_images((len(data), _channels(mode), *size), data[0], dtype)


@torch.library.custom_op("trivium::decode_resize", mutates_args=(), schema=_RESIZE_SCHEMA)
def _decode_resize_op(
    data: list[torch.Tensor],
    size: list[int] | None,
    interpolation: str,
    max_size: int | None,
    antialias: bool,
    mode: int,
    apply_exif_orientation: bool,
    dtype: torch.dtype | None = None,
) -> list[torch.Tensor]:
    """``DecodeResize(size, ...)`` of a list of encoded images, one output each."""
    transform = DecodeResize(
        size,
        InterpolationMode(interpolation),
        max_size,
        antialias,
        mode=ImageReadMode(mode),
        apply_exif_orientation=apply_exif_orientation,
        dtype=dtype,
    )
    images = transform._decode_all(_traced_plans(transform, data, dtype))
    return [_hwc_layout(image) for image in images]


@_decode_resize_op.register_fake
def _(data, size, interpolation, max_size, antialias, mode, apply_exif_orientation, dtype=None):
    ctx = torch.library.get_ctx()
    outputs = []
    for item in data:
        if size is not None and len(size) == 2:
            height, width = size
        else:  # the shorter side is size[0] (unless max_size caps the longer one)
            low = size[0] if size is not None and max_size is None else 1
            height, width = (ctx.new_dynamic_size(min=low, max=max_size) for _ in range(2))
        outputs.append(_fake_images((_channels(mode), height, width), item, dtype))
    return outputs


@torch.library.custom_op(
    "trivium::decode_random_resized_crop", mutates_args=(), schema=_RANDOM_RESIZED_CROP_SCHEMA
)
def _decode_random_resized_crop_op(
    data: list[torch.Tensor],
    draws: torch.Tensor,
    size: list[int],
    scale: list[float],
    ratio: list[float],
    interpolation: str,
    antialias: bool,
    mode: int,
    apply_exif_orientation: bool,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """``DecodeRandomResizedCrop`` of a list of encoded images, item i's box from ``draws[i]``."""
    transform = DecodeRandomResizedCrop(
        size,
        tuple(scale),  # type: ignore[arg-type]
        tuple(ratio),  # type: ignore[arg-type]
        InterpolationMode(interpolation),
        antialias,
        mode=ImageReadMode(mode),
        apply_exif_orientation=apply_exif_orientation,
        dtype=dtype,
    )
    u = draws.cpu()
    plans = [transform._plan_drawn(item, u[i]) for i, item in enumerate(data)]
    _check_traced_dtype(transform, plans, dtype)
    return _hwc_layout(transform._batch(plans))


@_decode_random_resized_crop_op.register_fake
def _(
    data,
    draws,
    size,
    scale,
    ratio,
    interpolation,
    antialias,
    mode,
    apply_exif_orientation,
    dtype=None,
):
    return _fake_images((len(data), _channels(mode), *size), data[0], dtype)
