"""The codecs as C++ torch operators: the one way from the public functions to the codecs.

The operator library ``trivium/vision/lib/libtrivium_ops.so`` (the only binding of the
codecs, built beside ``trivium.vision._C`` over the same format table) registers these ops
with ``TORCH_LIBRARY``; importing this module loads it with ``torch.ops.load_library``::

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
WebP of several frames raises ``NotImplementedError``. The fake kernels (unbacked
sizes, for ``torch.compile`` and ``torch.export``) are here.

Each decode op has two more overloads, which the public functions call, once per
call: ``<op>.status(<the op's arguments but path>, *, Tensor? out=None, bool
eager=True) -> (Tensor, int, str)`` reports a data failure (codec.h's ``ErrorKind``
and its message) or the damage warning's text instead of raising or warning, and
``<op>.status_list(Tensor[] data, ..., *, int threads=1, bool eager=True) ->
(Tensor[], int[], str[])`` decodes a list on ``threads`` C++ threads. With ``eager``
the results are those of the public decoders: ``dtype=None`` keeps uint16 samples, an
image is a [C, H, W] view of the decoder's [H, W, C] buffer, an animation gives its
[T, C, H, W] frames. :func:`check_status` is the one place that turns a report into a
Trivium error (``DecodeError``, ...) or a ``DecodeWarning``.

The public functions (``decode_jpeg``, ...) are the API. They call ``.status`` for
one image through ``trivium.vision._op_calls`` (the dispatcher's typed path: the same
op, without the boxed call's argument parsing; :attr:`DecodeOps.call`). Called from Python, the
plain overloads go through a Python ``BackendSelect`` kernel that calls ``.status`` and
:func:`check_status`, so that compiled and exported code raises what eager code
raises and reads the process-wide pixel limit. In a C++ program (no Python) they
raise ``c10::Error`` (``ValueError``, ``NotImplementedError``) with the path and the
message, and damage warnings are ``TORCH_WARN``.

Example:
    >>> import torch
    >>> from trivium.vision.io import encode_png
    >>> data = encode_png(torch.zeros(3, 4, 4, dtype=torch.uint8))
    >>> torch.ops.trivium.decode_image(data, 0, False).shape
    torch.Size([3, 4, 4])
    >>> image, error, message = torch.ops.trivium.decode_image.status(data, max_pixels=8)
    >>> error, message
    (3, '4x4 image exceeds the limit of 8 pixels')
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from trivium.core import is_tracing
from trivium.core.errors import DecodeWarning, UnsupportedFormatError
from trivium.core.threads import get_num_threads
from trivium.vision import _C, _op_calls
from trivium.vision.io.image.codec import (
    ImageReadMode,
    PathLike,
    as_tensor,
    batch_where,
    format_of,
    native_error,
    native_max_pixels,
    path_arg,
    warning_where,
)
from trivium.vision.io.image.file import read_file


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

#: The error kind ``<op>.status`` reports for ``decode_image`` of a format decoded in
#: Python (through Pillow), with the format's name as its message (``kDecodedInPython``
#: in ``torch_ops.cpp``; codec.h's ``ErrorKind`` values end at 5).
DECODED_IN_PYTHON = 6

# A tensor over read-only memory (bytes, a read-only array) warns once per process that
# it is not writable. The ops only read the encoded bytes: say it once, here, silently.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    torch.frombuffer(b"\0", dtype=torch.uint8)
    torch.from_numpy(np.frombuffer(b"\0", np.uint8))


class DecodeOps(NamedTuple):
    """The overloads of one decode op (``trivium::decode_<name>``), set up by :func:`decode_ops`.

    Example:
        >>> str(decode_ops("decode_image").status)
        'trivium.decode_image.status'
    """

    name: str
    default: Any
    status: Any
    status_list: Any
    #: ``.status`` with ``eager=True``, called through the dispatcher's typed path
    #: (``trivium.vision._op_calls``): every positional argument but ``path``, then
    #: ``out``; ``data`` may also be non-empty ``bytes``, read in place.
    call: Any


_python_decoders: list[Callable[[torch.Tensor, list[Any], bool], torch.Tensor | None]] = []


def register_python_decoder(
    decoder: Callable[[torch.Tensor, list[Any], bool], torch.Tensor | None],
) -> None:
    """Add a decoder for the formats ``decode_image``'s C++ kernel leaves to Python.

    ``decoder(data, values, eager)`` gets the encoded tensor, the op's arguments (data,
    mode, apply_exif_orientation, dtype, strict, max_pixels as the native limit, path)
    and whether the call is eager; it returns the image, or None for a format it does
    not decode. ``trivium.vision.io.image.pillow`` registers one, on import.

    Example:
        >>> len(_python_decoders) >= 1
        True
    """
    _python_decoders.append(decoder)


def _decode_in_python(values: list[Any], eager: bool) -> torch.Tensor:
    """``decode_image`` of a format decoded in Python; a format none decodes raises."""
    for decoder in _python_decoders:
        image = decoder(values[0], values, eager)
        if image is not None:
            return image
    path = values[-1]
    name = format_of(values[0].numpy(), path).name  # raises what is missing, if anything
    raise UnsupportedFormatError(f"{name.upper()} images are not supported", path=path)


def check_status(
    image: torch.Tensor,
    error: int,
    message: str,
    values: list[Any],
    func: str,
    eager: bool = True,
    stacklevel: int = 2,
) -> torch.Tensor:
    """The image a ``.status`` report gives; its failure raised, its damage warned.

    The one place where the codecs' reports become Python errors and warnings:
    ``error`` (codec.h's ``ErrorKind``) goes through
    :func:`~trivium.vision.io.image.codec.native_error`, naming the file; damage text gives
    a ``DecodeWarning`` ``"{path}: {message}"`` (``stacklevel`` counted from the caller
    of this function); :data:`DECODED_IN_PYTHON` decodes through the registered Python
    decoders. ``values`` are the op's arguments with the path last.

    Example:
        >>> check_status(torch.empty(0), 1, "premature end of data", [None, "a.jpg"], "x")
        Traceback (most recent call last):
        ...
        trivium.core.errors.DecodeError: a.jpg: premature end of data
    """
    if error == DECODED_IN_PYTHON:
        return _decode_in_python(values, eager)
    if error:
        raise native_error(error, message, values[-1], func)
    if message:
        where = warning_where(values[-1])
        warnings.warn(f"{where}{message}", DecodeWarning, stacklevel=stacklevel + 1)
    return image


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


def _python_kernel(op: Any, status: Any, func: str) -> Callable[..., Any]:
    """The plain overload ``op`` called from Python (compiled graphs, direct calls): its
    ``.status`` overload and :func:`check_status`, the process-wide limit read now."""
    bind = _binder(op)

    def kernel(keyset: Any, *args: Any, **kwargs: Any) -> Any:
        out = kwargs.pop("out", None)
        values = bind(args, kwargs)  # data, ..., max_pixels, path
        values[-2] = native_max_pixels(values[-2])
        image, error, message = status(*values[:-1], out=out, eager=False)
        return check_status(image, error, message, values, func, eager=False)

    return kernel


_lib = torch.library.Library("trivium", "IMPL")
_DECODE_OPS: dict[str, DecodeOps] = {}


def decode_ops(name: str) -> DecodeOps:
    """The overloads of the decode op ``trivium::<name>``, set up for Python (once).

    The plain overloads (``out`` too) get the Python kernel of compiled code and
    direct calls; the op gets its fake kernel (for ``torch.compile``). Its schema must
    start ``(Tensor data, int mode, ...)`` and end ``int max_pixels, str? path``
    (``dtype``, when it has one, sets the output dtype). Each format's module calls it
    once for its op.

    Example:
        >>> decode_ops("decode_image").default is decode_image_op
        True
    """
    if name in _DECODE_OPS:
        return _DECODE_OPS[name]
    packet = getattr(torch.ops.trivium, name)
    for overload in ("default", "out"):
        if overload in packet.overloads():
            op = getattr(packet, overload)
            kernel = _python_kernel(op, packet.status, name)
            _lib.impl(op._name.split("::")[1], kernel, "BackendSelect", with_keyset=True)
    torch.library.register_fake(f"trivium::{name}", _fake_decode(packet.default))
    ops = DecodeOps(
        name, packet.default, packet.status, packet.status_list, getattr(_op_calls, name)
    )
    _DECODE_OPS[name] = ops
    return ops


def encoded_tensor(data: Any, func: str) -> torch.Tensor:
    """Encoded bytes as the ops read them: a 1-D uint8 CPU tensor, over ``data`` where it can be.

    ``bytes``, ``bytearray``, 1-D uint8 arrays and contiguous 1-D uint8 CPU tensors
    are read in place; everything else goes through
    :func:`~trivium.vision.io.image.codec.as_tensor` (which refuses what is not bytes).

    Example:
        >>> encoded_tensor(b"\\xff\\xd8", "decode_jpeg")
        tensor([255, 216], dtype=torch.uint8)
    """
    kind = type(data)
    if kind is torch.Tensor:
        if (
            data.dtype == torch.uint8
            and data.dim() == 1
            and data.is_cpu
            and not data.requires_grad
            and data.is_contiguous()
        ):
            return data
    elif kind is bytes or kind is bytearray:
        if data:
            return torch.frombuffer(data, dtype=torch.uint8)
    elif (
        kind is np.ndarray
        and data.dtype == np.uint8
        and data.ndim == 1
        and data.flags.c_contiguous
        and data.size
    ):
        return torch.from_numpy(data)
    return as_tensor(data, func)


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

    Errors name ``path``, else an item's place in the list (as eager lists do);
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


def _to_device(image: torch.Tensor, device: Any) -> torch.Tensor:
    if device == "cpu":
        return image
    device = torch.device(device)
    if device.type == "cpu":
        return image
    if device.type == "cuda":  # an asynchronous copy from pinned memory
        return image.pin_memory().to(device, non_blocking=True)
    return image.to(device)


def _decode_list(
    ops: DecodeOps,
    input: Sequence[Any],
    args: tuple[Any, ...],
    path: PathLike | None,
    device: Any,
    paths: bool,
) -> list[torch.Tensor]:
    """A list in one ``.status_list`` call; the first failing item in list order raises."""
    names: list[Any] = []
    tensors = []
    for i, data in enumerate(input):
        where = batch_where(path_arg(path), i)
        if paths and isinstance(data, str | os.PathLike):
            where, data = os.fspath(data), read_file(data)
        names.append(where)
        tensors.append(encoded_tensor(data, ops.name))
    images, errors, messages = ops.status_list(tensors, *args, threads=get_num_threads())
    if any(errors) or any(messages):
        for i, (error, message) in enumerate(zip(errors, messages, strict=True)):
            values = [tensors[i], *args, names[i]]
            images[i] = check_status(images[i], error, message, values, ops.name, stacklevel=4)
    return [_to_device(image, device) for image in images]


_SEQUENCES = (list, tuple)


def run_decoder(
    ops: DecodeOps,
    input: Any,
    args: tuple[Any, ...],
    *,
    path: PathLike | None,
    device: str | torch.device,
    out: torch.Tensor | None = None,
    paths: bool = False,
) -> torch.Tensor | list[torch.Tensor]:
    """What every public decoder does with its op: one input or a list, eager or compiled.

    ``args`` are the op's arguments after ``data`` (``max_pixels`` last, -1 for the
    process-wide limit). Eager: one ``.status`` call (:attr:`DecodeOps.call`;
    ``.status_list`` for a list, on ``trivium.core.get_num_threads()`` threads; errors
    name the item), then :func:`check_status`; compiled: :func:`decode_traced`, where
    ``out`` raises. With ``paths``, inputs may be file paths (read here; inside
    ``torch.compile`` they raise).

    Example:
        >>> from trivium.vision.io import encode_png
        >>> data = encode_png(torch.zeros(1, 2, 3, dtype=torch.uint8))
        >>> ops = decode_ops("decode_image")
        >>> run_decoder(ops, [data], (3, False, None, None, -1), path=None, device="cpu")[0].shape
        torch.Size([3, 2, 3])
    """
    func = ops.name
    if is_tracing():
        if out is not None:
            raise ValueError(f"{func}: out= is not supported inside torch.compile")
        if paths and isinstance(input, str | os.PathLike):
            raise TypeError(
                f"{func}: inside torch.compile, pass the file's bytes (read_file(path)) "
                "rather than its path"
            )
        return decode_traced(ops.default, input, args, path, device, func)
    args = (*args[:-1], native_max_pixels(args[-1]))
    if isinstance(input, _SEQUENCES):
        if out is not None:
            raise ValueError("out= takes a single input, not a list")
        return _decode_list(ops, input, args, path, device, paths)
    if paths and isinstance(input, str | os.PathLike):
        path, input = input, read_file(input)
    data = input if type(input) is bytes and input else encoded_tensor(input, func)
    image, error, message = ops.call(data, *args, out)
    if error or message:
        values = [encoded_tensor(data, func), *args, path_arg(path)]
        image = check_status(image, error, message, values, func, True, 3)
    return image if device == "cpu" else _to_device(image, device)


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


decode_image_op = decode_ops("decode_image").default


@torch.library.register_fake("trivium::encode_jpeg")
def _(image, *args, **kwargs):
    return image.new_empty((torch.library.get_ctx().new_dynamic_size(min=1),), dtype=torch.uint8)


@torch.library.register_fake("trivium::encode_png")
def _(image, *args, **kwargs):
    return image.new_empty((torch.library.get_ctx().new_dynamic_size(min=1),), dtype=torch.uint8)


@torch.library.register_fake("trivium::encode_webp")
def _(image, *args, **kwargs):
    return image.new_empty((torch.library.get_ctx().new_dynamic_size(min=1),), dtype=torch.uint8)
