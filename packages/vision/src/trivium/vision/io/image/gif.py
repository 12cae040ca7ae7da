"""GIF decode as ``torchvision.io.decode_gif``: every frame, composited as torchvision does.

The file's blocks are read here; each frame's LZW data is decoded by Pillow (which
releases the GIL while it decodes) into palette indices, and the frames are
composited as torchvision's decoder (giflib) composites them:

- the canvas is the logical screen, widened to the first frame where that is larger;
- the first frame, and a frame whose own disposal method is "restore to background"
  (2), start from the background colour (the global palette's background entry,
  black without a global palette); every other frame starts from the previous
  frame's result (torchvision reads a frame's disposal method as how to begin it,
  where the GIF specification means how to end it);
- the frame's pixels are painted at its offset with its local palette, else the
  global one, except those of its transparent index.

An animated GIF gives ``[N, 3, H, W]``, a single frame ``[3, H, W]``, uint8 RGB.
Pixels a frame places outside the canvas are left out (torchvision writes them past
its buffer). The pixel limit counts every frame.

Example:
    >>> import io
    >>> from PIL import Image
    >>> frames = [Image.new("P", (4, 3), i) for i in range(2)]
    >>> for frame in frames:
    ...     frame.putpalette([0, 0, 0, 255, 0, 0])
    >>> buffer = io.BytesIO()
    >>> frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:])
    >>> decode_gif(buffer.getvalue()).shape
    torch.Size([2, 3, 3, 4])
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from trivium.core.errors import DecodeError
from trivium.vision.io.image.codec import EncodedData, ImageReadMode, PathLike
from trivium.vision.io.image.pillow import (
    PillowFormat,
    check_pixels,
    decode_image_of,
    finish,
    is_gif,
    register_pillow_format,
    to_mode,
)

_TO_BACKGROUND = 2
# A palette whose entry i is (i, i, i): Pillow then reads a frame as mode "L", its
# values the frame's palette indices.
_INDEX_PALETTE = bytes(np.repeat(np.arange(256, dtype=np.uint8), 3))


@dataclass(frozen=True)
class Frame:
    """One image of a GIF: where it goes, its palette and its LZW data (a slice of the file).

    Example:
        >>> Frame(0, 0, 2, 2, None, False, b"", -1, 0).width
        2
    """

    top: int
    left: int
    height: int
    width: int
    palette: bytes | None  # its local colour table, if it has one
    interlaced: bool
    data: bytes  # the LZW minimum code size and the data sub-blocks, terminator included
    transparent: int  # the transparent palette index, -1 for none
    disposal: int


@dataclass(frozen=True)
class Gif:
    """A GIF's logical screen, global palette, background index and frames.

    Example:
        >>> Gif(4, 3, None, 0, []).frames
        []
    """

    width: int
    height: int
    palette: bytes | None
    background: int
    frames: list[Frame]


class _Reader:
    """Reads the blocks of a GIF; running out of data raises a truncation ``DecodeError``."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise DecodeError("truncated image data (the file ends inside a GIF block)")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def u16(self) -> int:
        return int.from_bytes(self.take(2), "little")

    def byte(self) -> int:
        return self.take(1)[0]

    def palette(self, packed: int) -> bytes | None:
        return self.take(3 << ((packed & 7) + 1)) if packed & 0x80 else None

    def sub_blocks(self) -> None:
        """Skip data sub-blocks up to and including their terminator."""
        while size := self.byte():
            self.take(size)


def parse(data: bytes, frames: bool = True) -> Gif:
    """The structure of a GIF (with ``frames`` False: the screen and the first frame only).

    Blocks after the last frame that cannot be read end the file there (as a missing
    trailer does); damage before or inside a frame raises ``DecodeError``.

    Example:
        >>> gif = parse(b"GIF89a\\x01\\x00\\x01\\x00\\x00\\x00\\x00"  # no global palette
        ...             b",\\x00\\x00\\x00\\x00\\x01\\x00\\x01\\x00\\x80"  # a local one
        ...             b"\\x00\\x00\\x00\\xff\\xff\\xff\\x02\\x02\\x44\\x01\\x00;")
        >>> gif.width, gif.height, len(gif.frames), gif.frames[0].palette
        (1, 1, 1, b'\\x00\\x00\\x00\\xff\\xff\\xff')
    """
    reader = _Reader(data)
    if not is_gif(reader.take(6)):
        raise DecodeError("not a GIF image (bad signature)")
    width, height = reader.u16(), reader.u16()
    packed, background = reader.byte(), reader.byte()
    reader.take(1)  # pixel aspect ratio
    found = Gif(width, height, reader.palette(packed), background, [])
    transparent, disposal = -1, 0
    while reader.pos < len(data):
        kind = reader.byte()
        if kind == 0x3B:  # trailer
            break
        if kind == 0x21:  # extension
            label = reader.byte()
            start = reader.pos
            reader.sub_blocks()
            if label == 0xF9 and reader.pos - start >= 6:  # graphic control
                flags, index = data[start + 1], data[start + 4]
                disposal = (flags >> 2) & 7
                transparent = index if flags & 1 else -1
            continue
        if kind != 0x2C:
            if found.frames:  # junk after the last frame: the file ends there
                break
            raise DecodeError(f"corrupt GIF data (block 0x{kind:02x} before any image)")
        left, top, frame_width, frame_height = (reader.u16() for _ in range(4))
        flags = reader.byte()
        palette = reader.palette(flags)
        start = reader.pos
        reader.take(1)  # LZW minimum code size
        reader.sub_blocks()
        frame = Frame(
            top,
            left,
            frame_height,
            frame_width,
            palette,
            bool(flags & 0x40),
            data[start : reader.pos],
            transparent,
            disposal,
        )
        found.frames.append(frame)
        transparent, disposal = -1, 0
        if not frames:
            break
    if not found.frames:
        raise DecodeError("corrupt GIF data (no image)")
    return found


def canvas_size(gif: Gif) -> tuple[int, int]:
    """(height, width) of the output: the screen, widened to the first frame (as torchvision)."""
    first = gif.frames[0]
    return max(gif.height, first.height), max(gif.width, first.width)


def _indices(frame: Frame) -> np.ndarray:
    """A frame's palette indices, (height, width) uint8, decoded by Pillow."""
    from PIL import GifImagePlugin

    header = b"GIF89a" + frame.width.to_bytes(2, "little") + frame.height.to_bytes(2, "little")
    descriptor = b"," + bytes(4) + header[6:10] + (b"\x40" if frame.interlaced else b"\x00")
    mini = header + b"\xf7\x00\x00" + _INDEX_PALETTE + descriptor + frame.data + b";"
    try:
        image = GifImagePlugin.GifImageFile(io.BytesIO(mini))
        image.load()
        indices = np.asarray(image)
    except Exception as e:  # Pillow raises many types for bad data; none may leak
        reason = str(e) or type(e).__name__
        what = "truncated" if "truncated" in reason else "corrupt"
        raise DecodeError(f"{what} image data (GIF frame: {reason})") from None
    if indices.shape != (frame.height, frame.width):
        raise DecodeError("corrupt GIF data (a frame decoded to the wrong size)")
    return indices


def _colors(palette: bytes | None) -> np.ndarray | None:
    """A palette as a (256, 3) table, entries past its end black."""
    if palette is None:
        return None
    table = np.zeros((256, 3), np.uint8)
    entries = np.frombuffer(palette, np.uint8).reshape(-1, 3)[:256]
    table[: len(entries)] = entries
    return table


def composite(gif: Gif, max_pixels: int) -> np.ndarray:
    """Every frame of ``gif`` composited as torchvision composites them: (N, H, W, 3) uint8."""
    height, width = canvas_size(gif)
    check_pixels(height, width, max_pixels, len(gif.frames))
    global_colors = _colors(gif.palette)
    background = np.zeros(3, np.uint8)
    if global_colors is not None:
        background = global_colors[gif.background]
    out = np.empty((len(gif.frames), height, width, 3), np.uint8)
    for i, frame in enumerate(gif.frames):
        if i > 0 and frame.disposal != _TO_BACKGROUND:
            out[i] = out[i - 1]
        else:
            out[i] = background
        colors = _colors(frame.palette) if frame.palette is not None else global_colors
        if colors is None:
            raise DecodeError("corrupt GIF data (a frame without a global or local palette)")
        indices = _indices(frame)
        bottom, right = min(frame.top + frame.height, height), min(frame.left + frame.width, width)
        if frame.top >= bottom or frame.left >= right:
            continue
        indices = indices[: bottom - frame.top, : right - frame.left]
        region = out[i, frame.top : bottom, frame.left : right]
        painted = colors[indices]
        if frame.transparent >= 0:
            keep = (indices == frame.transparent)[..., None]
            painted = np.where(keep, region, painted)
        region[...] = painted
    return out


class GifFormat(PillowFormat):
    """The GIF record: all frames, composited as torchvision's decoder composites them."""

    def decode_with(
        self,
        data: Any,
        mode: int,
        apply_orientation: bool,
        dtype: torch.dtype | None,
        max_pixels: int,
        eager: bool = True,
    ) -> torch.Tensor:
        """Decode ``data`` (bytes-like) as the op ``decode_image`` does (GIFs have no EXIF).

        Example:
            >>> from trivium.vision.io.image.codec import format_of
            >>> data = (b"GIF89a\\x01\\x00\\x01\\x00\\x80\\x00\\x00"  # 1x1
            ...         b"\\x00\\x00\\x00\\xff\\xff\\xff"  # palette: black, white
            ...         b",\\x00\\x00\\x00\\x00\\x01\\x00\\x01\\x00\\x00"
            ...         b"\\x02\\x02\\x44\\x01\\x00;")
            >>> format_of(data).decode_with(data, 0, False, None, 0).shape
            torch.Size([3, 1, 1])
        """
        frames = to_mode(composite(parse(bytes(memoryview(data))), max_pixels), mode)
        image = finish(frames, 0, dtype, eager, "decode_image")
        return image[0] if image.shape[0] == 1 else image

    def read_header(self, buffer: Any) -> dict[str, Any]:
        """The fields of ``ImageInfo``: the output's size, 3 channels (RGB), 8 bits."""
        gif = parse(bytes(memoryview(buffer)), frames=False)
        height, width = canvas_size(gif)
        return {
            "format": "gif",
            "height": height,
            "width": width,
            "channels": 3,
            "bit_depth": 8,
            "orientation": 0,
            "color_space": "palette",
            "progressive": gif.frames[0].interlaced,
        }


_decode_gif = decode_image_of("gif")


def decode_gif(
    input: EncodedData | list[EncodedData],
    *,
    device: str | torch.device = "cpu",
    max_pixels: int | None = ...,  # type: ignore[assignment]
    path: PathLike | None = None,
) -> torch.Tensor | list[torch.Tensor]:
    """Decode a GIF to uint8 RGB: ``[N, 3, H, W]`` for N frames, ``[3, H, W]`` for one.

    As ``torchvision.io.decode_gif``: every frame, composited as its decoder does (see
    the module notes). ``max_pixels`` limits the pixels of all frames together; a
    list of inputs gives a list. Damage raises ``DecodeError`` naming ``path``.
    ``decode_image`` and ``read_image`` read GIFs the same way (and apply ``mode`` to
    every frame).

    Example:
        >>> data = (b"GIF89a\\x01\\x00\\x01\\x00\\x80\\x00\\x00"  # 1x1, palette black, white
        ...         b"\\x00\\x00\\x00\\xff\\xff\\xff,\\x00\\x00\\x00\\x00\\x01\\x00\\x01\\x00\\x00"
        ...         b"\\x02\\x02\\x44\\x01\\x00;")
        >>> decode_gif(data).tolist()
        [[[0]], [[0]], [[0]]]
    """
    mode = ImageReadMode.UNCHANGED
    return _decode_gif(input, mode, device=device, max_pixels=max_pixels, path=path)


register_pillow_format("gif", lambda fp: None, kind=GifFormat)
