"""Image I/O: JPEG (libjpeg-turbo), PNG (libspng) and WebP (libwebp) natively, and through
Pillow GIF, BMP, TIFF, PPM/PGM, AVIF and HEIC (with pillow-heif).

The API follows ``torchvision.io`` (names and argument order), and adds scaled and
region JPEG decode, header-only ``image_info``, batch decode on a thread pool,
decode into caller buffers, and clear errors for bad input.

Example:
    >>> import torch
    >>> from trivium.vision.io import decode_image, encode_jpeg, ImageReadMode
    >>> data = encode_jpeg(torch.zeros(3, 16, 16, dtype=torch.uint8))
    >>> decode_image(data, ImageReadMode.RGB).shape
    torch.Size([3, 16, 16])
"""

from trivium.vision.io.image import ops
from trivium.vision.io.image.codec import (
    ImageInfo,
    ImageReadMode,
    get_max_image_pixels,
    set_max_image_pixels,
    sniff_format,
)
from trivium.vision.io.image.decode import decode_image, image_info, read_image
from trivium.vision.io.image.file import read_file, write_file
from trivium.vision.io.image.gif import decode_gif
from trivium.vision.io.image.jpeg import SUPPORTED_SCALES, decode_jpeg, encode_jpeg, write_jpeg
from trivium.vision.io.image.orientation import apply_exif_orientation
from trivium.vision.io.image.pillow import decode_avif, decode_heic
from trivium.vision.io.image.png import decode_png, encode_png, write_png
from trivium.vision.io.image.webp import decode_webp, encode_webp, write_webp
from trivium.vision.io.video.clips import RandomClipSampler, UniformClipSampler, VideoClips
from trivium.vision.io.video.read_write import read_video, read_video_timestamps, write_video
from trivium.vision.io.video.reader import VideoFrames, VideoReader

__all__ = [
    "SUPPORTED_SCALES",
    "ImageInfo",
    "ImageReadMode",
    "RandomClipSampler",
    "UniformClipSampler",
    "VideoClips",
    "VideoFrames",
    "VideoReader",
    "apply_exif_orientation",
    "decode_avif",
    "decode_gif",
    "decode_heic",
    "decode_image",
    "decode_jpeg",
    "decode_png",
    "decode_webp",
    "encode_jpeg",
    "encode_png",
    "encode_webp",
    "get_max_image_pixels",
    "image_info",
    "ops",
    "read_file",
    "read_image",
    "read_video",
    "read_video_timestamps",
    "set_max_image_pixels",
    "sniff_format",
    "write_file",
    "write_jpeg",
    "write_png",
    "write_video",
    "write_webp",
]
