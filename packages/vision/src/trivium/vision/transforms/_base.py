"""``ImageTransform``: the base of the image transforms.

It adds to :class:`trivium.core.Transform`:

* samples of any nesting (tuples, lists, dicts, namedtuples): images are
  transformed (tensors ``[..., C, H, W]``, ``tv_tensors.Image``/``Video``, PIL
  images, which go through their tensor and come back as a PIL image of the same
  mode; typed images come back typed), ``BoundingBoxes``, ``Mask`` and other
  tv_tensors go through the kernel registered for the transform and their type
  (:mod:`trivium.vision.transforms._dispatch`; none registered: ``TypeError``),
  every other input passes through unchanged. A plain tensor counts as an image
  unless the sample holds a ``tv_tensors.Image``/``Video`` (torchvision v2's rule);
* ``per_sample``: with ``per_sample=True`` a random transform draws independent
  parameters for every image of a batch, as tensors with one row per image of the
  flattened batch. How the batch is then computed depends on the device: on CUDA
  (and under ``torch.compile``) ``transform`` runs once on the whole batch (one
  kernel launch per step); on CPU it runs on cache-sized chunks of images, each
  with its rows of the parameters, written into one output (see
  :meth:`ImageTransform._transform_images`). Both give the same result from the same draws.
  A sample with boxes or masks is one image: ``per_sample=True`` raises ``ValueError`` there;
* compile-safe randomness: :meth:`ImageTransform._draw` samples from the
  transform's ``generator``; under ``torch.compile`` (which cannot trace a
  ``torch.Generator``) it samples from torch's default generator instead, so seed
  compiled pipelines with ``torch.manual_seed``.

Example:
    >>> import torch
    >>> class Invert(ImageTransform):
    ...     def transform(self, inpt, params):
    ...         return 255 - inpt
    >>> img, label = Invert()(torch.zeros(3, 2, 2, dtype=torch.uint8), 7)
    >>> int(img.max()), label
    (255, 7)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch.nn.modules import module as _nn_module

from trivium.core import Transform
from trivium.core import transform as _core
from trivium.core.tracing import is_tracing
from trivium.core.transform import flatten_inputs
from trivium.vision import tv_tensors
from trivium.vision.transforms._dispatch import get_kernel, is_image_type
from trivium.vision.transforms._image import (
    eager_cpu,
    is_image,
    is_pil,
    pil_colors_to_tensor,
    to_pil_image,
)

__all__ = ["Compose", "ImageTransform"]


class ImageTransform(Transform):
    """Base class of the image transforms (see the module docstring).

    Subclasses implement ``make_params(inputs)`` and ``transform(inpt, params)``
    like any :class:`trivium.core.Transform`; ``transform`` only ever sees tensors.
    ``inputs`` given to ``make_params`` are the images only (PIL images already
    converted), so ``inputs[0]`` is always a tensor ``[..., C, H, W]``.

    Example:
        >>> import torch
        >>> class Brighten(ImageTransform):
        ...     def make_params(self, inputs):
        ...         n = self.num_samples(inputs[0])
        ...         return {"gain": 1 + self._draw((n,), inputs[0].device)}
        ...     def transform(self, inpt, params):
        ...         return inpt * params["gain"].view(-1, 1, 1, 1)
        >>> Brighten(per_sample=True)(torch.ones(4, 3, 2, 2)).shape
        torch.Size([4, 3, 2, 2])
    """

    def __init__(self, *, per_sample: bool = False, generator: torch.Generator | None = None):
        super().__init__(generator)
        if not isinstance(per_sample, bool):
            raise TypeError(f"{type(self).__name__}: per_sample must be a bool, got {per_sample!r}")
        self.per_sample = per_sample

    def forward(self, *inputs: Any) -> Any:
        """Transform every leaf of the sample ``inputs`` with one draw of parameters.

        Images go through ``transform``; boxes, masks and other tv_tensors through
        :meth:`transform_tv_tensor`; the rest passes through.

        Example:
            >>> import torch
            >>> class Zero(ImageTransform):
            ...     def transform(self, inpt, params):
            ...         return inpt * 0
            >>> Zero()(torch.ones(1, 2, 2), "keep")[1]
            'keep'
        """
        if len(inputs) == 1:
            x = inputs[0]
            if type(x) is torch.Tensor and x.ndim >= 3:
                # One plain image tensor (the per-image pipeline): what the general path
                # below does for it, without flattening, leaf kinds or rebuilding.
                params = self.make_params([x])
                if not self.per_sample and type(self)._transform_images is _TRANSFORM_IMAGES:
                    transform = self.active_transform()
                    return transform(x, self._params_for_chunk(params, None, x.shape[:-3]))
                return self._transform_images([x], params)[0]
        flat, rebuild = flatten_inputs(self, inputs)
        kinds = _leaf_kinds(flat)
        as_tensors = [
            _as_image_tensor(x) if k == _IMAGE else x for x, k in zip(flat, kinds, strict=True)
        ]
        images = [t for t, k in zip(as_tensors, kinds, strict=True) if k == _IMAGE]
        if not images:
            raise TypeError(
                f"{type(self).__name__}: expected an image tensor [..., C, H, W], a "
                f"tv_tensors.Image/Video or a PIL image among the inputs, got "
                f"{', '.join(type(x).__name__ for x in flat)}"
            )
        if self.per_sample and _TYPED in kinds:
            raise ValueError(
                f"{type(self).__name__}: per_sample=True draws parameters per image of a batch, "
                f"but the sample holds {_typed_names(flat, kinds)}, which belong to one image; "
                f"use per_sample=False for detection and segmentation samples"
            )
        params = self.make_sample_params(images, flat)
        done = iter(self._transform_images(images, params))
        outputs = []
        for x, t, kind in zip(flat, as_tensors, kinds, strict=True):
            if kind == _IMAGE:
                outputs.append(self._output(x, t, next(done)))
            elif kind == _TYPED:
                outputs.append(self.transform_tv_tensor(x, params))
            else:
                outputs.append(x)
        return rebuild(outputs)

    def make_sample_params(self, images: list[torch.Tensor], sample: list[Any]) -> dict[str, Any]:
        """The parameters of one call, given its ``images`` and every leaf of its ``sample``.

        The hook for transforms whose parameters depend on other parts of the sample
        than its images (e.g. the boxes a crop must keep): override it to read them
        from ``sample``. The default returns ``self.make_params(images)``. A single
        plain image tensor (the per-image path of ``forward``) goes to ``make_params``
        directly.

        Example:
            >>> import torch
            >>> class CountLeaves(ImageTransform):
            ...     def make_sample_params(self, images, sample):
            ...         return {"leaves": len(sample)}
            ...     def transform(self, inpt, params):
            ...         return inpt + params["leaves"]
            >>> CountLeaves()(torch.zeros(1, 2, 2), {"label": 7})[0][0, 0, 0]
            tensor(2.)
        """
        return self.make_params(images)

    # Whether tv_tensors that are not images (boxes, masks, a user's types) pass through
    # unchanged: True for the transforms that leave geometry alone (colour, dtype). A
    # geometry transform raises TypeError for a type its functional has no kernel for:
    # boxes left where they were while the image moves would be silently wrong.
    _passthrough_tv_tensors: bool = False

    def transform_tv_tensor(self, inpt: tv_tensors.TVTensor, params: dict[str, Any]) -> Any:
        """Transform ``inpt``, a tv_tensor that is not an image, with this call's ``params``.

        A geometry transform overrides it to call its functional with the drawn
        parameters (``self._call_kernel(F.resize, inpt, ...)``), so boxes, masks and a
        user's own types go to the kernel registered for their type (see
        :func:`~trivium.vision.transforms.register_kernel`). The default passes ``inpt``
        through when :attr:`_passthrough_tv_tensors`, else raises ``TypeError``.

        Example:
            >>> import torch
            >>> from trivium.vision import tv_tensors
            >>> from trivium.vision.transforms import functional as F
            >>> class Flip(ImageTransform):
            ...     def transform(self, inpt, params):
            ...         return F.horizontal_flip_image(inpt)
            ...     def transform_tv_tensor(self, inpt, params):
            ...         return self._call_kernel(F.horizontal_flip, inpt)
            >>> boxes = tv_tensors.BoundingBoxes([[0, 0, 1, 1]], format="XYXY", canvas_size=(4, 4))
            >>> Flip()(torch.zeros(3, 4, 4), boxes)[1].tolist()
            [[3, 0, 4, 1]]
        """
        if self._passthrough_tv_tensors:
            return inpt
        raise self._no_kernel(inpt)

    def _has_kernel(self, functional: Any, inpt: Any) -> bool:
        """Whether ``functional`` has a kernel for ``inpt``'s type.

        False: ``inpt`` passes through (:attr:`_passthrough_tv_tensors`); without a
        kernel otherwise: ``TypeError``.
        """
        try:
            get_kernel(functional, type(inpt))
        except TypeError:
            if self._passthrough_tv_tensors:
                return False
            raise self._no_kernel(inpt) from None
        return True

    def _call_kernel(self, functional: Any, inpt: Any, *args: Any, **kwargs: Any) -> Any:
        """``functional(inpt, *args, **kwargs)``, checked by :meth:`_has_kernel` first."""
        if not self._has_kernel(functional, inpt):
            return inpt
        return functional(inpt, *args, **kwargs)

    def _no_kernel(self, inpt: Any) -> TypeError:
        name = type(inpt).__name__
        return TypeError(
            f"{type(self).__name__} has no kernel for {name}: it would leave the {name} "
            f"unchanged while the image changes. Register one for the transform's "
            f"functional with trivium.vision.transforms.register_kernel, or drop it from "
            f"the sample"
        )

    def _output(self, original: Any, tensor: torch.Tensor, out: Any) -> Any:
        """What ``forward`` returns for ``original`` (``tensor`` as given to ``transform``)."""
        if isinstance(original, tv_tensors.TVTensor):
            return _rewrap(out, original)
        if not is_pil(original):
            return out
        if isinstance(out, (tuple, list)):  # e.g. FiveCrop: one PIL image per crop
            return type(out)(self._as_pil(original, tensor, o) for o in out)
        return self._as_pil(original, tensor, out)

    @staticmethod
    def _as_pil(original: Any, tensor: torch.Tensor, out: Any) -> Any:
        if not isinstance(out, torch.Tensor):
            return out
        return to_pil_image(out, mode=original.mode if out.shape[-3] == tensor.shape[-3] else None)

    # Applying the parameters: one batched call, or on CPU chunk by chunk.

    # Names of the ``make_params`` entries that hold one row per image (with ``per_sample``):
    # a tensor [N, ...] (or [*batch, ...], shaped like the batch), or a tuple of them.
    _per_image_params: tuple[str, ...] = ()
    # Values (C * H * W of the input) per chunk on CPU; None: always one batched call. A
    # chunk of one to a few 224 x 224 images stays in the caches through all of the
    # kernel's passes, while a whole batch streams through memory on every pass and
    # page-faults every fresh batch-sized buffer. The default is one such image per
    # chunk, which also lets kernels take their one-image paths (slices instead of
    # gathers and masks); kernels with a fixed cost per call take a few.
    _cpu_chunk_values: int | None = 3 * 224 * 224

    def _images_per_chunk(self, images: list[torch.Tensor]) -> int:
        """How many images one call of ``transform`` gets on CPU (0: the whole batch at once)."""
        if self._cpu_chunk_values is None or not self.per_sample:
            return 0
        if not eager_cpu(*images):  # CUDA: one launch per step; compiled: no unrolled loop
            return 0
        batch = images[0].shape[:-3]
        if any(img.shape[:-3] != batch for img in images):
            return 0
        values = max(math.prod(img.shape[-3:]) for img in images)
        per_chunk = max(1, self._cpu_chunk_values // max(values, 1))
        return per_chunk if per_chunk < math.prod(batch) else 0

    def _transform_images(self, images: list[torch.Tensor], params: dict[str, Any]) -> list[Any]:
        """``transform`` every image with ``params``: chunk by chunk for a per-sample CPU batch.

        Each chunk of the flattened batch gets its rows of the per-image parameters
        (:attr:`_per_image_params`) and its result is written into one output per
        input, so the result is the one batched call's, from the same draws. On CUDA
        and under ``torch.compile`` every image is one batched call.

        Example:
            >>> import torch
            >>> class Shift(ImageTransform):
            ...     _per_image_params = ("shift",)
            ...     _cpu_chunk_values = 1  # one image per chunk
            ...     def transform(self, inpt, params):
            ...         return inpt + params["shift"].view(-1, 1, 1, 1)
            >>> out = Shift(per_sample=True)._transform_images([torch.zeros(3, 1, 1, 1)],
            ...                                      {"shift": torch.arange(3.0)})
            >>> out[0].flatten().tolist()
            [0.0, 1.0, 2.0]
        """
        per_chunk = self._images_per_chunk(images)
        batch = images[0].shape[:-3]
        if per_chunk == 0:
            params = self._params_for_chunk(params, None, batch)
            transform = self.active_transform()
            return [transform(img, params) for img in images]
        n = math.prod(batch)
        flats = [img.reshape(n, *img.shape[-3:]) for img in images]
        outs: list[torch.Tensor | None] = [None] * len(images)
        for start in range(0, n, per_chunk):
            rows = slice(start, min(start + per_chunk, n))
            chunk_params = self._params_for_chunk(params, rows, batch)
            for k, flat in enumerate(flats):
                part = flat[rows]
                done = self.transform(part, chunk_params)
                out = outs[k]
                if out is None:
                    if _same_view(done, part):
                        continue  # the chunk came back as itself (unchanged, or changed in place)
                    out = outs[k] = done.new_empty((n, *done.shape[1:]))
                    if start:
                        out[:start] = flat[:start]  # the chunks before came back as themselves
                out[rows] = done
        # An input no chunk changed comes back as itself, as from the batched call.
        return [
            img if out is None else out.reshape(*batch, *out.shape[1:])
            for img, out in zip(images, outs, strict=True)
        ]

    def _params_for_chunk(
        self, params: dict[str, Any], rows: slice | None, batch: torch.Size
    ) -> dict[str, Any]:
        """The params of one ``transform`` call, shared by the inputs: the images ``rows``.

        The per-image entries are cut to the images ``rows`` of the flattened batch
        ``batch`` (all of them when None). A subclass may add values computed from
        the draws here, once per chunk instead of once per input.
        """
        if rows is None and not self.per_sample:
            return dict(params)  # one draw for the whole input: nothing to cut
        n = math.prod(batch)

        def cut(value: Any) -> Any:
            if isinstance(value, _ChunkRows):  # drawn chunk by chunk: this chunk's draws
                return torch.cat(value) if rows is None else value[rows.start // len(value[0])]
            if rows is None:
                return value
            if isinstance(value, tuple):
                return tuple(cut(v) for v in value)
            if not isinstance(value, torch.Tensor) or value.ndim == 0:
                return value  # one value for every image
            if len(batch) != 1 and value.shape[: len(batch)] == batch:
                value = value.reshape(n, *value.shape[len(batch) :])
            return value[rows] if value.shape[0] == n else value

        sliced = dict(params)
        for name in self._per_image_params:
            if name in sliced:
                sliced[name] = cut(sliced[name])
        return sliced

    def _draw_per_image(self, images: list[torch.Tensor], shape: Sequence[int]) -> Any:
        """``_draw((n, *shape))``: per-image uniforms for the ``n`` draws of ``images``.

        For a per-sample CPU batch they are drawn chunk by chunk, as a :class:`_ChunkRows`
        that :meth:`_params_for_chunk` cuts: CPU generators draw in sequence, so the chunks
        hold the values of one draw, and no batch-sized buffer is page-faulted in (a big
        per-image draw such as ElasticTransform's noise otherwise costs ~5% more).
        """
        img = images[0]
        n = self._num_draws(img)
        per_chunk = self._images_per_chunk(images)
        if per_chunk == 0 or self._device().type != "cpu":
            return self._draw((n, *shape), img.device)
        return _ChunkRows(
            self._draw((min(per_chunk, n - start), *shape), img.device)
            for start in range(0, n, per_chunk)
        )

    # Parameter sampling helpers.

    @staticmethod
    def num_samples(img: torch.Tensor) -> int:
        """Number of images in a ``[..., C, H, W]`` batch (1 for a single image).

        Example:
            >>> import torch
            >>> ImageTransform.num_samples(torch.zeros(2, 5, 3, 4, 4))
            10
        """
        n = 1
        for d in img.shape[:-3]:
            n *= d
        return n

    def _tensor_params(self) -> bool:
        """Whether to draw parameters as tensors: with ``per_sample`` or under ``torch.compile``.

        On that path the kernels take tensor parameters and never branch on random
        values in Python (which ``torch.compile(fullgraph=True)`` cannot trace).
        """
        return self.per_sample or is_tracing()

    def _num_draws(self, img: torch.Tensor) -> int:
        """How many parameter sets to draw: one per image when ``per_sample``, else one."""
        return self.num_samples(img) if self.per_sample else 1

    def _draw(self, shape: Sequence[int], device: torch.device | None = None) -> torch.Tensor:
        """Uniform samples in [0, 1) on ``device`` from ``generator`` (default RNG if compiling)."""
        return self._sample(
            lambda where, **gen: torch.rand(tuple(shape), device=where, **gen), device
        )


class Compose(_core.Compose):
    """Apply ``transforms`` one after the other (torchvision v2's ``Compose``).

    :class:`trivium.core.Compose` with fused steps: for a single input, a transform
    may offer one step computing itself and the transform after it (``ToDtype`` to
    a float dtype with ``scale=True`` followed by ``Normalize`` is one pass over an
    integer image). The result is the two calls' (up to float rounding); modules with
    forward hooks, and every module while a global forward hook is registered, are
    called one by one so that each hook sees its call.

    Example:
        >>> import torch
        >>> from trivium.vision.transforms import Normalize, ToDtype
        >>> t = Compose([ToDtype(torch.float32, scale=True), Normalize([0.5], [0.5])])
        >>> t(torch.full((1, 1, 2), 255, dtype=torch.uint8)).tolist()
        [[[1.0, 1.0]]]
    """

    def forward(self, *inputs: Any) -> Any:
        """Run the chain, fused pairs included for a single input (see the class docstring)."""
        if len(inputs) != 1:
            return super().forward(*inputs)
        (x,) = inputs
        for step in _fused_steps(list(self.transforms)):
            x = step(x)
        return x


def _fused_steps(transforms: list[Any]) -> list[Any]:
    """``transforms`` with each pair that offers a fused step replaced by that step.

    A transform offers one with ``_fuse_next(following)``, returning a function of
    one input that computes ``following(self(x))``, or None.
    """
    if len(transforms) < 2 or _global_hooks() or is_tracing():
        return transforms  # under torch.compile every step is traced as it is
    steps, i = [], 0
    while i < len(transforms):
        fused = _fused_pair(transforms[i], transforms[i + 1]) if i + 1 < len(transforms) else None
        if fused is None:
            steps.append(transforms[i])
            i += 1
        else:
            steps.append(fused)
            i += 2
    return steps


def _fused_pair(first: Any, second: Any) -> Any:
    # Looked up on the class: a missing attribute of an nn.Module goes through its slow
    # __getattr__ and an AttributeError.
    fuse = getattr(type(first), "_fuse_next", None)
    if fuse is None or _has_hooks(first) or _has_hooks(second):
        return None  # a hook expects to see each module called
    return fuse(first, second)


def _has_hooks(module: Any) -> bool:
    return bool(
        getattr(module, "_forward_hooks", None) or getattr(module, "_forward_pre_hooks", None)
    )


def _global_hooks() -> bool:
    # torch has no public way to ask whether a global module hook is registered.
    return bool(_nn_module._global_forward_hooks or _nn_module._global_forward_pre_hooks)


# What ImageTransform.forward may skip for one image (a subclass may replace it).
_TRANSFORM_IMAGES = ImageTransform._transform_images

# How ImageTransform.forward treats each leaf of a sample.
_IMAGE, _TYPED, _OTHER = "image", "typed", "other"


def _leaf_kinds(flat: list[Any]) -> list[str]:
    """The kind of every leaf: an image, a tv_tensor with a kernel of its own, or other.

    ``tv_tensors.Image``/``Video`` and PIL images are images. A plain tensor with 3 or
    more dims is an image too, unless a ``tv_tensors.Image``/``Video`` is in the
    sample: then, as in torchvision v2, the typed ones are the images and plain
    tensors pass through.
    """
    typed_image = any(is_image_type(x) for x in flat)
    kinds = []
    for x in flat:
        if isinstance(x, tv_tensors.TVTensor):
            kinds.append(_IMAGE if is_image_type(x) else _TYPED)
        elif is_pil(x) or (not typed_image and is_image(x)):
            kinds.append(_IMAGE)
        else:
            kinds.append(_OTHER)
    return kinds


def _as_image_tensor(x: Any) -> torch.Tensor:
    """The plain tensor the image kernels get for the image ``x``."""
    if is_pil(x):
        return pil_colors_to_tensor(x)
    return x.as_subclass(torch.Tensor) if isinstance(x, tv_tensors.TVTensor) else x


def _rewrap(out: Any, like: tv_tensors.TVTensor) -> Any:
    """``out`` (a tensor, or a tuple of them for e.g. FiveCrop) with the type of ``like``."""
    if isinstance(out, (tuple, list)):
        return type(out)(_rewrap(o, like) for o in out)
    return tv_tensors.wrap(out, like=like) if isinstance(out, torch.Tensor) else out


def _typed_names(flat: list[Any], kinds: list[str]) -> str:
    return ", ".join(
        sorted({type(x).__name__ for x, k in zip(flat, kinds, strict=True) if k == _TYPED})
    )


class _ChunkRows(tuple):
    """A per-image parameter drawn chunk by chunk: item k holds the rows of chunk k."""


def _same_view(a: Any, b: torch.Tensor) -> bool:
    """Whether ``a`` is ``b`` itself or a view with the same memory, shape and strides."""
    return (
        isinstance(a, torch.Tensor)
        and a.data_ptr() == b.data_ptr()
        and a.shape == b.shape
        and a.stride() == b.stride()
    )
