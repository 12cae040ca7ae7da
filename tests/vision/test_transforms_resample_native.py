"""The native crop + resize of uint8 batches (``_C.resized_crops_u8``) against torch's kernel.

``RandomResizedCrop(per_sample=True)`` on a uint8 CPU batch runs it; the reference
is torch's antialiased ``interpolate`` of each crop, the kernel the per-image path
calls: every pixel must be equal, whatever the layout, channels, filter and scale.
"""

from __future__ import annotations

import pytest
import torch
from image_assets import JPEG_DIR
from torch.nn.functional import interpolate

from trivium.vision import transforms as T
from trivium.vision.io import read_image
from trivium.vision.transforms import functional as F
from trivium.vision.transforms.functional.geometry import (
    _native_resized_crops,
    _resized_crops_each,
)

_C = pytest.importorskip("trivium.vision._C")
native = _C.resized_crops_u8


@pytest.fixture(scope="module")
def photo() -> torch.Tensor:
    return read_image(JPEG_DIR / "tv-grace_hopper_517x606.jpg")  # [3, 606, 517] uint8


def reference(x: torch.Tensor, boxes: list[list[int]], size: list[int], mode: str) -> torch.Tensor:
    """torch's antialiased interpolate of every crop (align_corners=False)."""
    return torch.cat(
        [
            interpolate(
                x[k : k + 1, :, t : t + h, l : l + w].contiguous(),
                size=size,
                mode=mode,
                align_corners=False,
                antialias=True,
            )
            for k, (t, l, h, w) in enumerate(boxes)
        ]
    )


def run_native(x: torch.Tensor, boxes: list[list[int]], size: list[int], mode: str, threads=1):
    out = torch.empty((x.shape[0], x.shape[1], *size), dtype=torch.uint8)
    native(x.numpy(), torch.tensor(boxes).numpy(), out.numpy(), mode, threads)
    return out


def random_boxes(g: torch.Generator, n: int, h: int, w: int) -> list[list[int]]:
    boxes = []
    for _ in range(n):
        bh = int(torch.randint(1, h + 1, (1,), generator=g))
        bw = int(torch.randint(1, w + 1, (1,), generator=g))
        top = int(torch.randint(0, h - bh + 1, (1,), generator=g))
        left = int(torch.randint(0, w - bw + 1, (1,), generator=g))
        boxes.append([top, left, bh, bw])
    return boxes


def photo_batch(photo: torch.Tensor, n: int, channels: int, h: int, w: int) -> torch.Tensor:
    """``n`` crops of the photo [n, channels, h, w] (channels beyond 3 repeat the photo's)."""
    planes = photo[torch.arange(channels) % 3]
    return torch.stack([planes[:, 9 * k : 9 * k + h, 7 * k : 7 * k + w] for k in range(n)])


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("channels", [1, 2, 3, 4, 5])
def test_random_boxes_and_sizes_equal_torch(photo: torch.Tensor, mode: str, channels: int):
    g = torch.Generator().manual_seed(channels)
    for trial in range(12):
        h, w = (int(v) for v in torch.randint(8, 260, (2,), generator=g))
        size = [int(v) for v in torch.randint(1, 240, (2,), generator=g)]
        x = photo_batch(photo, 3, channels, h, w)
        boxes = random_boxes(g, 3, h, w)
        assert torch.equal(run_native(x, boxes, size, mode), reference(x, boxes, size, mode)), (
            trial,
            h,
            w,
            size,
            boxes,
        )


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_every_kind_of_axis_equals_torch(photo: torch.Tensor, mode: str) -> None:
    # Up- and downscales of each axis alone and together, steep downscales (more than
    # 4 taps: the scalar loops), a box the output's size (a copy), 1-pixel boxes.
    x = photo_batch(photo, 1, 3, 600, 500)
    cases = [
        ([10, 20, 150, 150], [224, 224]),
        ([0, 0, 224, 150], [224, 224]),
        ([0, 0, 150, 224], [224, 224]),
        ([5, 7, 500, 480], [224, 224]),
        ([0, 0, 600, 500], [37, 23]),
        ([3, 4, 50, 60], [50, 60]),
        ([100, 100, 1, 1], [16, 9]),
        ([0, 0, 600, 1], [30, 30]),
        ([2, 3, 17, 250], [17, 19]),
        ([0, 0, 600, 500], [2, 3]),  # (torch's kernel fails an assert at [1, 1])
        # Whole-number scales: weights of exactly 0 inside windows (trimmed; the
        # windows then need not move monotonically).
        ([1, 2, 50, 40], [100, 80]),
        ([1, 2, 30, 31], [90, 93]),
        ([0, 0, 200, 160], [100, 80]),
        ([0, 0, 300, 240], [100, 80]),
    ]
    for box, size in cases:
        out = run_native(x, [box], size, mode)
        assert torch.equal(out, reference(x, [box], size, mode)), (box, size)


def test_any_layout_and_threads_give_the_same_pixels(photo: torch.Tensor) -> None:
    x = photo_batch(photo, 9, 3, 224, 224).contiguous()
    boxes = random_boxes(torch.Generator().manual_seed(7), 9, 224, 224)
    expected = reference(x, boxes, [224, 224], "bilinear")
    channels_last = x.contiguous(memory_format=torch.channels_last)
    strided = torch.zeros(9, 3, 230, 460, dtype=torch.uint8)[:, :, 3:227, 5:453:2]
    strided.copy_(x)
    for src in (x, channels_last, strided):
        for threads in (1, 2, 4):
            assert torch.equal(run_native(src, boxes, [224, 224], "bilinear", threads), expected)
    # Into an output that is a strided view too.
    out = torch.zeros(9, 3, 224, 448, dtype=torch.uint8)
    view = out[..., ::2]
    native(x.numpy(), torch.tensor(boxes).numpy(), view.numpy(), "bilinear", 2)
    assert torch.equal(view, expected)
    assert not out[..., 1::2].any()


def test_bad_arguments_raise_value_errors(photo: torch.Tensor) -> None:
    x = photo_batch(photo, 2, 3, 40, 50)
    out = torch.empty(2, 3, 8, 8, dtype=torch.uint8)
    ok = torch.tensor([[0, 0, 40, 50], [1, 2, 3, 4]])
    with pytest.raises(ValueError, match=r"box 1 \(top=30, left=2, height=11, width=4\) .* 40x50"):
        bad = torch.tensor([[0, 0, 40, 50], [30, 2, 11, 4]])
        native(x.numpy(), bad.numpy(), out.numpy(), "bilinear")
    with pytest.raises(ValueError, match="filter"):
        native(x.numpy(), ok.numpy(), out.numpy(), "nearest")
    with pytest.raises(ValueError, match="uint8"):
        native(x.float().numpy(), ok.numpy(), out.numpy(), "bilinear")
    with pytest.raises(ValueError, match="as many images"):
        native(x.numpy(), ok.numpy(), out[:1].numpy(), "bilinear")
    with pytest.raises(ValueError, match=r"\[N, 4\]"):
        native(x.numpy(), ok[:, :3].numpy(), out.numpy(), "bilinear")
    with pytest.raises(ValueError, match="not inside the 40x50 image"):
        _resized_crops_each(x, *torch.tensor([[0, 0], [0, 0], [41, 5], [5, 5]]), [8, 8])


def test_per_sample_random_resized_crop_equals_each_images_resized_crop(photo) -> None:
    # [64, 3, 224, 224] as in the benchmark; the same boxes through the per-image kernel.
    batch = torch.stack([photo[:, 5 * k : 5 * k + 224, 4 * k : 4 * k + 224] for k in range(64)])
    assert _native_resized_crops(batch, "bilinear", True) is not None  # the native path runs
    t = T.RandomResizedCrop(224, per_sample=True, generator=torch.Generator().manual_seed(2))
    out = t(batch)
    t.generator = torch.Generator().manual_seed(2)
    boxes = t.make_params([batch])["box"]
    for n in range(64):
        top, left, h, w = (int(b[n]) for b in boxes)
        assert torch.equal(out[n], F.resized_crop(batch[n], top, left, h, w, [224, 224]))


def test_the_native_path_is_taken_only_where_it_is_exact() -> None:
    x = torch.zeros(2, 3, 8, 8, dtype=torch.uint8)
    assert _native_resized_crops(x, "bicubic", True) is not None
    assert _native_resized_crops(x, "bilinear", False) is None  # other weights without antialias
    assert _native_resized_crops(x, "nearest", True) is None
    assert _native_resized_crops(x.float(), "bilinear", True) is None
    # Channels-last rows: torch's kernel reads them without repacking.
    channels_last = x.contiguous(memory_format=torch.channels_last)
    assert _native_resized_crops(channels_last, "bilinear", True) is None


def hostile_int(g: torch.Generator, limit: int) -> int:
    """An edge or out-of-range coordinate: 0, -1, the limit and around it, or a huge one."""
    choices = [0, -1, 1, limit - 1, limit, limit + 1, 2**31, -(2**31), 2**62, -(2**62)]
    if bool(torch.rand((), generator=g) < 0.5):
        return int(torch.randint(-limit, 2 * limit + 1, (), generator=g))
    return choices[int(torch.randint(len(choices), (), generator=g))]


def test_hostile_boxes_sizes_and_threads_raise_value_errors_or_match_torch(photo) -> None:
    # A fuzz of the kernel's arguments: whatever the boxes, output size and thread
    # count, the call raises a ValueError or gives torch's pixels; it never crashes.
    g = torch.Generator().manual_seed(7)
    x = photo_batch(photo, 3, 3, 24, 30)
    outcomes = {"raised": 0, "equal": 0}
    for _ in range(300):
        boxes = random_boxes(g, 3, 24, 30)
        if bool(torch.rand((), generator=g) < 0.6):  # one coordinate of one box made hostile
            k, i = (int(torch.randint(n, (), generator=g)) for n in (3, 4))
            boxes[k][i] = hostile_int(g, (24, 30)[i % 2])
        # From 2 pixels: torch's reference kernel asserts on some 1-pixel outputs.
        size = [int(torch.randint(2, 12, (), generator=g)) for _ in range(2)]
        threads = [1, 2, 0, -1, 10_000][int(torch.randint(5, (), generator=g))]
        out = torch.empty((3, 3, *size), dtype=torch.uint8)
        try:
            native(x.numpy(), torch.tensor(boxes).numpy(), out.numpy(), "bilinear", threads)
        except ValueError:
            outcomes["raised"] += 1
            continue
        for t, l, h, w in boxes:
            assert t >= 0 and l >= 0 and h >= 1 and w >= 1 and t + h <= 24 and l + w <= 30, boxes
        assert torch.equal(out, reference(x, boxes, size, "bilinear"))
        outcomes["equal"] += 1
    assert min(outcomes.values()) > 30, outcomes  # both outcomes were exercised
