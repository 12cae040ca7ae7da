"""The codecs as C++ torch operators: one path for eager, scripted, compiled and exported code.

The operator library ``trivium/vision/lib/libtrivium_ops.so`` (built with
``trivium.vision._C``, over the same codec core) registers these ops with
``TORCH_LIBRARY``; importing this module loads it with ``torch.ops.load_library``::

    trivium::decode_jpeg(Tensor data, int mode=0, bool apply_exif_orientation=False,
        float? scale=None, int[]? min_size=None, int[]? roi=None, bool? strict=None,
        int max_pixels=-1, str? path=None) -> Tensor
    trivium::decode_png(Tensor data, int mode=0, bool apply_exif_orientation=False,
        ScalarType? dtype=None, bool? strict=None, int max_pixels=-1, str? path=None) -> Tensor
    trivium::decode_webp(... the same as decode_png ...) -> Tensor
    trivium::decode_image(... the same as decode_png ...) -> Tensor
    trivium::encode_jpeg(Tensor image, int quality=75, int subsampling=420,
        bool progressive=False, bool optimize=False) -> Tensor
    trivium::encode_png(Tensor image, int compression_level=6) -> Tensor
    trivium::encode_webp(Tensor image, float quality=75, bool lossless=False, int method=4,
        bool exact=False) -> Tensor

``decode_jpeg``, ``decode_png`` and ``decode_webp`` also have an ``out`` overload
(``*, Tensor(a!) out``).
``data`` is a 1-D uint8 tensor of the encoded bytes; ``mode`` an ``ImageReadMode``
value; ``strict`` None for the default rule on damaged data (see ``decode_jpeg``);
``max_pixels`` -1 for the process-wide limit (``set_max_image_pixels``, read
when the op runs; Pillow's 178,956,970 where Python is absent), 0 for none. The output
is a contiguous [C, H, W] CPU tensor of data-dependent height and width. Its dtype must
be known before decoding: ``dtype``, or uint8 when ``dtype`` is None, so a 16-bit image
with ``dtype=None`` raises ``TypeError`` (pass ``dtype=torch.uint16``), and an animated
WebP of several frames raises ``UnsupportedFormatError``. In eager mode
the public decoders keep uint16 samples and return a [C, H, W] view of the decoder's
[H, W, C] buffer, and an animation's frames as [T, C, H, W] (see :func:`native_dtype`).

In a Python process the ops raise Trivium errors (``DecodeError``, ...) and issue
``DecodeWarning``: a thin ``BackendSelect`` kernel translates what the C++ kernel
raises. Without Python (a C++ program), they raise ``c10::Error`` with the same message.
The fake kernels (unbacked sizes, for ``torch.compile`` and ``torch.export``) are here.

Example:
    >>> import torch
    >>> from trivium.vision.io import encode_png
    >>> data = encode_png(torch.zeros(3, 4, 4, dtype=torch.uint8))
    >>> torch.ops.trivium.decode_image(data, 0, False).shape
    torch.Size([3, 4, 4])
    >>> torch.ops.trivium.decode_image(data, max_pixels=8)
    Traceback (most recent call last):
    ...
    trivium.core.errors.DecodeError: 4x4 image exceeds the limit of 8 pixels
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trivium.core import is_tracing, ops_intercepted
from trivium.core.errors import EMPTY_INPUT, DecodeWarning
from trivium.vision import _C
from trivium.vision.io.codec import (
    BAD_ARGUMENT,
    CORRUPT,
    EMPTY,
    UNSUPPORTED,
    EncodedData,
    ImageReadMode,
    PathLike,
    as_tensor,
    batch_where,
    decode_batch,
    native_error,
    native_max_pixels,
    warning_where,
)
from trivium.vision.io.file import read_file
from trivium.vision.io.kernels import path_arg


def library_path() -> Path:
    """Where the operator library is: ``trivium/vision/lib/libtrivium_ops.so``.

    Load it with ``torch.ops.load_library(path)`` in a process that does not import
    ``trivium.vision`` (C++: ``dlopen``), before loading a model that decodes.

    Example:
        >>> library_path().name
        'libtrivium_ops.so'
    """
    return Path(_C.__file__).parent / "lib" / "libtrivium_ops.so"


def built_for_torch() -> str:
    """The torch version the operator library was built against.

    Example:
        >>> built_for_torch() == torch.__version__
        True
    """
    return (library_path().parent / "torch_version.txt").read_text().strip()


def check_torch_version(built: str, installed: str) -> None:
    """Refuse an operator library built for another torch (its C++ ABI differs).

    Example:
        >>> check_torch_version("2.13.0+cpu", "2.13.0")
        >>> check_torch_version("2.13.0", "2.14.0")
        Traceback (most recent call last):
        ...
        ImportError: trivium.vision's operator library was built for torch 2.13.0, but torch 2.14.0 is installed: reinstall trivium-vision against this torch
    """  # noqa: E501
    if built.split("+")[0] != installed.split("+")[0]:
        raise ImportError(
            f"trivium.vision's operator library was built for torch {built}, but torch "
            f"{installed} is installed: reinstall trivium-vision against this torch"
        )


def _load() -> None:
    path = library_path()
    if not path.exists():
        raise ImportError(f"trivium.vision's operator library is missing ({path.name}): reinstall")
    check_torch_version(built_for_torch(), torch.__version__)
    torch.ops.load_library(str(path))


_load()

encode_jpeg_op = torch.ops.trivium.encode_jpeg.default
encode_png_op = torch.ops.trivium.encode_png.default
encode_webp_op = torch.ops.trivium.encode_webp.default
_python_call = torch.ops.trivium._python_call.default

# Python's side of the ops: trivium errors, DecodeWarning, and the process-wide limit.

_eager = threading.local()
_AFTER_BACKEND_SELECT = torch._C._dispatch_keyset_full_after(torch._C.DispatchKey.BackendSelect)


@contextmanager
def native_dtype() -> Iterator[None]:
    """Eager mode on this thread: ``dtype=None`` keeps uint16 samples, and results are views.

    Example:
        >>> from trivium.vision.io import encode_png
        >>> data = encode_png(torch.zeros(1, 2, 2, dtype=torch.uint16))
        >>> with native_dtype():
        ...     decode_image_op(data).dtype
        torch.uint16
    """
    before = getattr(_eager, "active", False)
    _eager.active = True
    try:
        yield
    finally:
        _eager.active = before


def translate_error(error: Exception, path: str | None, func: str | None = None) -> Exception:
    """The error for what a C++ kernel raised (its message names ``path`` first).

    The op's ``c10::Error`` carries its ``ErrorKind`` in its type and words
    (``NotImplementedError``: unsupported; the function's name first: a bad argument,
    a plain ``ValueError``; the empty-input message), and
    :func:`~trivium.vision.io.codec.native_error` maps it.

    Example:
        >>> translate_error(ValueError("a.png: empty input (0 bytes)"), "a.png")
        EmptyInputError('a.png: empty input (0 bytes)')
        >>> translate_error(ValueError("decode_jpeg: roi (...) is outside"), None, "decode_jpeg")
        ValueError('decode_jpeg: roi (...) is outside')
    """
    reason = str(error)
    if func is not None and isinstance(error, ValueError) and reason.startswith(f"{func}: "):
        return native_error(BAD_ARGUMENT, reason.removeprefix(f"{func}: "), path, func)
    if path is not None:
        reason = reason.removeprefix(f"{path}: ")
    if isinstance(error, NotImplementedError):
        kind = UNSUPPORTED
    else:
        kind = EMPTY if reason == EMPTY_INPUT else CORRUPT
    return native_error(kind, reason, path, func or "decode_image")


def _binder(op: Any) -> Callable[[tuple[Any, ...], dict[str, Any]], list[Any]]:
    """For ``op``: args, kwargs -> every positional argument of its schema, defaults filled in.

    The schema is read once here, not on every call.
    """
    positional = [a for a in op._schema.arguments if not a.kwarg_only]
    names = [a.name for a in positional]
    defaults = [a.default_value for a in positional]
    count = len(names)

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        values = list(args[:count])
        for i in range(len(values), count):
            values.append(kwargs.pop(names[i], defaults[i]))
        return values

    return bind


def _translating(op: Any) -> Callable[..., Any]:
    names = [a.name for a in op._schema.arguments]
    limit_at, path_at = names.index("max_pixels"), names.index("path")
    func = op._schema.name.split("::")[1]
    bind = _binder(op)

    def kernel(keyset: Any, *args: Any, **kwargs: Any) -> Any:
        values = bind(args, kwargs)
        values[limit_at] = native_max_pixels(values[limit_at])
        path = values[path_at]
        eager = getattr(_eager, "active", False)
        refused = None
        _python_call(2 if eager else 1)
        try:
            image = op.redispatch(keyset & _AFTER_BACKEND_SELECT, *values, **kwargs)
        except (ValueError, NotImplementedError) as e:
            # decode_image's C++ kernel refuses the formats decoded in Python.
            if not (isinstance(e, NotImplementedError) and func == "decode_image"):
                raise translate_error(e, path, func) from None
            refused = e
        finally:
            damage = _python_call(0)
        if refused is not None:
            image = _decode_in_python(values, eager)
            if image is None:
                raise translate_error(refused, path, func) from None
            return image
        if damage:  # the text of the warning, the file's name aside
            message = f"{warning_where(path)}{damage}"
            warnings.warn(message, DecodeWarning, stacklevel=4 if eager else 2)
        return image

    return kernel


_python_decoders: list[Callable[[torch.Tensor, list[Any], bool], torch.Tensor | None]] = []


def register_python_decoder(
    decoder: Callable[[torch.Tensor, list[Any], bool], torch.Tensor | None],
) -> None:
    """Add a decoder for the formats ``decode_image``'s C++ kernel leaves to Python.

    ``decoder(data, values, eager)`` gets the op's encoded tensor, its arguments (data,
    mode, apply_exif_orientation, dtype, strict, max_pixels as the native limit, path)
    and whether the call is eager; it returns the image, or None for a format it does
    not decode. ``trivium.vision.io.pillow`` registers one, on import.

    Example:
        >>> len(_python_decoders) >= 1
        True
    """
    _python_decoders.append(decoder)


def _decode_in_python(values: list[Any], eager: bool) -> torch.Tensor | None:
    """``decode_image`` of a format decoded in Python, or None where no decoder takes it."""
    for decoder in _python_decoders:
        image = decoder(values[0], values, eager)
        if image is not None:
            return image
    return None


_lib = torch.library.Library("trivium", "IMPL")


def decode_op(name: str) -> Any:
    """The decode op ``trivium::<name>`` (its default overload), set up for Python.

    Each overload (``out`` too) gets the Python kernel that raises Trivium errors,
    issues ``DecodeWarning`` and reads the process-wide pixel limit; the op gets its
    fake kernel (for ``torch.compile``). Its schema must start ``(Tensor data, int
    mode, ...)`` and hold ``max_pixels`` and ``path`` (``dtype``, when it has one, sets
    the output dtype). Each format's module calls it once for its op.

    Example:
        >>> decode_op("decode_image") is decode_image_op
        True
    """
    packet = getattr(torch.ops.trivium, name)
    if name in _SET_UP:
        return packet.default
    for overload in packet.overloads():
        op = getattr(packet, overload)
        _lib.impl(op._name.split("::")[1], _translating(op), "BackendSelect", with_keyset=True)
    torch.library.register_fake(f"trivium::{name}", _fake_decode(packet.default))
    _SET_UP.add(name)
    return packet.default


_SET_UP: set[str] = set()


def decode_eager(
    op: Any,
    data: EncodedData,
    args: tuple[Any, ...],
    path: PathLike | None,
    device: torch.device,
    func: str,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Eager mode: ``op(data, *args, path=path)`` on CPU (into ``out``), then moved to ``device``.

    Example:
        >>> from trivium.vision.io import encode_png
        >>> data = encode_png(torch.zeros(1, 2, 3, dtype=torch.uint8))
        >>> decode_eager(decode_image_op, data, (3,), None, torch.device("cpu"), "x").shape
        torch.Size([3, 2, 3])
    """
    tensor = as_tensor(data, func)
    with native_dtype():
        if out is not None:
            image = op.overloadpacket.out(tensor, *args, path=path_arg(path), out=out)
        else:
            image = op(tensor, *args, path=path_arg(path))
    if device.type == "cpu":
        return image
    if device.type == "cuda":  # an asynchronous copy from pinned memory
        return image.pin_memory().to(device, non_blocking=True)
    return image.to(device)


def direct_buffer(data: Any, out: torch.Tensor | None, device: str | torch.device) -> Any:
    """``data``'s bytes for calling the codec directly, or None where the op must run.

    The direct call skips the dispatcher: it is taken in plain eager mode (not under
    ``torch.compile``, ``torch.export``, tracing or a dispatch mode), without ``out``,
    to the CPU, for non-empty ``bytes``, ``bytearray``, 1-D uint8 arrays and
    contiguous 1-D uint8 CPU tensors, which the codec reads in place (no copy).
    Everything else (and every error) goes through the op.

    Example:
        >>> direct_buffer(b"\\xff\\xd8", None, "cpu")
        b'\\xff\\xd8'
        >>> direct_buffer(b"\\xff\\xd8", None, "cuda") is None
        True
    """
    if out is not None or not (device == "cpu" or _is_cpu(device)):
        return None
    if type(data) is bytes or type(data) is bytearray:
        buffer = data
    elif type(data) is torch.Tensor:
        if not _plain_tensor(data):
            return None
        buffer = data.numpy()
    elif isinstance(data, np.ndarray):
        if data.dtype != np.uint8 or data.ndim != 1 or not data.flags.c_contiguous:
            return None
        buffer = data
    else:
        return None
    if not len(buffer) or ops_intercepted():
        return None
    return buffer


_CPU = torch.device("cpu")


def _is_cpu(device: Any) -> bool:
    return isinstance(device, torch.device) and device.type == "cpu" and device.index is None


def _plain_tensor(data: torch.Tensor) -> bool:
    return (
        data.dtype == torch.uint8
        and data.dim() == 1
        and data.device.type == "cpu"
        and data.is_contiguous()
        and not data.requires_grad
    )


def check_traceable(data: Any, func: str) -> None:
    """Inside ``torch.compile`` encoded data must be a tensor: bytes and arrays cannot be traced.

    Example:
        >>> check_traceable(b"\\xff\\xd8", "decode_jpeg")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: decode_jpeg: inside torch.compile, pass the encoded image as ... not bytes
    """
    if not isinstance(data, torch.Tensor):
        raise TypeError(
            f"{func}: inside torch.compile, pass the encoded image as a 1-D uint8 tensor "
            f"(e.g. from read_file), not {type(data).__name__}"
        )


def decode_traced(
    op: Any,
    input: Any,
    args: tuple[Any, ...],
    path: PathLike | None,
    device: str | torch.device,
    func: str,
) -> torch.Tensor | list[torch.Tensor]:
    """Inside ``torch.compile``: ``op(data, *args, path)`` on one encoded tensor or each of a list.

    Errors name ``path``, else an item's place in the list (as eager batches do);
    the results are then moved to ``device``.

    Example:
        >>> import torch
        >>> from trivium.vision.io import encode_png
        >>> data = encode_png(torch.zeros(1, 2, 3, dtype=torch.uint8))
        >>> [t.shape for t in decode_traced(decode_image_op, [data], (3,), None, "cpu", "x")]
        [torch.Size([3, 2, 3])]
    """
    many = isinstance(input, list | tuple)
    images = []
    for i, data in enumerate(input if many else [input]):
        check_traceable(data, func)
        where = batch_where(path_arg(path), i) if many else path_arg(path)
        images.append(op(data, *args, path=where).to(device))
    return images if many else images[0]


#: A format's direct list decode: ``direct(buffers, path)`` decodes the
#: :func:`direct_buffer` of every item with the codec and gives the op's eager
#: results, raising and warning as the op does (naming ``path``, else the item:
#: :func:`batch_where`).
DirectDecode = Callable[[list[Any], str | None], list[torch.Tensor]]


def run_decoder(
    op: Any,
    input: Any,
    args: tuple[Any, ...],
    *,
    path: PathLike | None,
    device: str | torch.device,
    func: str,
    out: torch.Tensor | None = None,
    paths: bool = False,
    direct: DirectDecode | None = None,
) -> torch.Tensor | list[torch.Tensor]:
    """What every public decoder does with its op: one input or a list, eager or compiled.

    Eager: :func:`decode_eager` on one input, or a list in parallel (errors name the
    item); compiled: :func:`decode_traced`, where ``out`` raises. With ``paths``,
    inputs may be file paths (read here; inside ``torch.compile`` they raise).
    ``direct``, where given, decodes a list without the op when every item has a
    :func:`direct_buffer`: see :data:`DirectDecode`. (A format's decoder takes its own
    direct path for one input, before calling this.)

    Example:
        >>> from trivium.vision.io import encode_png
        >>> data = encode_png(torch.zeros(1, 2, 3, dtype=torch.uint8))
        >>> run_decoder(decode_image_op, [data], (3,), path=None, device="cpu", func="x")[0].shape
        torch.Size([3, 2, 3])
    """
    many = isinstance(input, (list, tuple))
    if direct is not None and many and input:
        buffers = [direct_buffer(data, out, device) for data in input]
        if all(buffer is not None for buffer in buffers):
            return direct(buffers, path_arg(path))
    if is_tracing():
        if out is not None:
            raise ValueError(f"{func}: out= is not supported inside torch.compile")
        if paths and isinstance(input, str | os.PathLike):
            raise TypeError(
                f"{func}: inside torch.compile, pass the file's bytes (read_file(path)) "
                "rather than its path"
            )
        return decode_traced(op, input, args, path, device, func)
    device = _CPU if device == "cpu" else torch.device(device)

    def decode_one(data: Any, where: PathLike | None, out: torch.Tensor | None = None):
        if paths and isinstance(data, str | os.PathLike):
            where, data = data, read_file(data)
        return decode_eager(op, data, args, where, device, func, out)

    if many:
        return decode_batch(decode_one, input, path, out)
    return decode_one(input, path, out)


# Fake kernels: the output's size is data-dependent (unbacked), it is contiguous, and
# its dtype is ``dtype`` or uint8.


def _fake_image(data: torch.Tensor, mode: int, dtype: torch.dtype | None) -> torch.Tensor:
    ctx = torch.library.get_ctx()
    channels = ImageReadMode(mode).channels
    if channels is None:
        channels = ctx.new_dynamic_size(min=1, max=4)
    height = ctx.new_dynamic_size(min=1)
    width = ctx.new_dynamic_size(min=1)
    dtype = torch.uint8 if dtype is None else dtype
    return data.new_empty((channels, height, width), dtype=dtype, device="cpu")


def _fake_decode(op: Any) -> Callable[..., torch.Tensor]:
    names = [a.name for a in op._schema.arguments if not a.kwarg_only]
    dtype_at = names.index("dtype") if "dtype" in names else None
    bind = _binder(op)

    def fake(*args: Any, **kwargs: Any) -> torch.Tensor:
        values = bind(args, dict(kwargs))
        dtype = None if dtype_at is None else values[dtype_at]
        return _fake_image(values[0], values[1], dtype)

    return fake


decode_image_op = decode_op("decode_image")


@torch.library.register_fake("trivium::encode_jpeg")
def _(image, *args, **kwargs):
    return image.new_empty((torch.library.get_ctx().new_dynamic_size(min=1),), dtype=torch.uint8)


@torch.library.register_fake("trivium::encode_png")
def _(image, *args, **kwargs):
    return image.new_empty((torch.library.get_ctx().new_dynamic_size(min=1),), dtype=torch.uint8)


@torch.library.register_fake("trivium::encode_webp")
def _(image, *args, **kwargs):
    return image.new_empty((torch.library.get_ctx().new_dynamic_size(min=1),), dtype=torch.uint8)
