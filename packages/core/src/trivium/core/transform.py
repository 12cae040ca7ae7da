"""The ``Transform`` base class and the containers that combine transforms.

A :class:`Transform` separates *what is random* from *what is computed*:
``make_params`` samples the parameters once per call (with the transform's own
``torch.Generator`` when one is given), and ``transform`` applies them to each
input, so an image and its mask get the same crop. ``Compose``, ``RandomApply``,
``RandomChoice`` and ``RandomOrder`` follow ``torchvision.transforms.v2``.

Example:
    >>> import torch
    >>> class AddNoise(Transform):
    ...     def make_params(self, inputs):
    ...         return {"shift": self._uniform(-1.0, 1.0)}
    ...     def transform(self, inpt, params):
    ...         return inpt + params["shift"]
    >>> t = AddNoise(generator=torch.Generator().manual_seed(0))
    >>> a, b = t(torch.zeros(2), torch.ones(2))  # both shifted by the same amount
    >>> bool(torch.equal(b - a, torch.ones(2)))
    True
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree

from trivium.core.seeding import keep_in_worker, transform_generator
from trivium.core.tracing import is_tracing

__all__ = [
    "Compose",
    "RandomApply",
    "RandomChoice",
    "RandomModule",
    "RandomOrder",
    "Transform",
    "check_probability",
    "flatten_inputs",
]

# Attributes that RandomModule.extra_repr never lists.
_REPR_SKIP = frozenset({"training", "generator", "transforms"})


def flatten_inputs(owner: nn.Module, inputs: tuple[Any, ...]) -> tuple[list[Any], Callable]:
    """Split ``forward``'s arguments into their leaves and a function that rebuilds the output.

    For transforms that override ``forward``: any nesting of tuples, lists, dicts and
    namedtuples is walked (torch's pytree); tensors (typed ones included), PIL images,
    numbers and strings are leaves. The rebuilt output of several arguments is a
    tuple, of a single one the argument's own structure. ``owner`` names the
    transform in the ``TypeError`` raised when there are no inputs.

    Example:
        >>> leaves, rebuild = flatten_inputs(Transform(), ((1, {"a": 2}),))
        >>> leaves
        [1, 2]
        >>> rebuild([10, 20])
        (10, {'a': 20})
    """
    if not inputs:
        raise TypeError(f"{type(owner).__name__} expects at least one input")
    if len(inputs) == 1 and isinstance(inputs[0], torch.Tensor):
        return [inputs[0]], _first  # the common case, without the tree walk
    flat, spec = _pytree.tree_flatten(inputs if len(inputs) > 1 else inputs[0])
    return flat, functools.partial(_pytree.tree_unflatten, treespec=spec)


def _first(outs: list[Any]) -> Any:
    return outs[0]


def _chain(transforms: Sequence[Callable], inputs: tuple[Any, ...]) -> Any:
    """Apply ``transforms`` one after the other to the ``forward`` arguments ``inputs``."""
    if len(inputs) > 1:
        for t in transforms:
            inputs = t(*inputs)
        return inputs
    (x,) = inputs
    for t in transforms:
        x = t(x)
    return x


class RandomModule(nn.Module):
    """An ``nn.Module`` that draws its randomness by the seeding rule: the base of random modules.

    ``generator`` (optional, a ``torch.Generator``) is the source of randomness; draw
    through :meth:`active_generator` (pass it to torch's sampling functions) or the
    helpers ``self._rand``, ``self._randint``, ``self._uniform``, ``self._randperm``
    and ``self._sample``, so that draws follow the seeding rule of
    :mod:`trivium.core.seeding`: a seeded ``generator`` makes results reproducible,
    and inside DataLoader workers every worker, epoch and sample still draws
    differently. ``repr`` lists the public settings. ``forward`` is the subclass's
    own, with any signature; :class:`Transform` adds the sample contract
    (``make_params`` / ``transform``, every argument an input).

    Example:
        >>> import torch
        >>> class Jitter(RandomModule):
        ...     def __init__(self, amount, generator=None):
        ...         super().__init__(generator)
        ...         self.amount = amount
        ...     def forward(self, waveform, scale=1.0):
        ...         noise = torch.rand(waveform.shape, generator=self.active_generator())
        ...         return waveform + scale * self.amount * noise
        >>> t = Jitter(0.1, generator=torch.Generator().manual_seed(0))
        >>> t
        Jitter(amount=0.1, generator=torch.Generator(device='cpu'))
        >>> t(torch.zeros(3), scale=0.0)
        tensor([0., 0., 0.])
    """

    def __init__(self, generator: torch.Generator | None = None) -> None:
        super().__init__()
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(
                f"{type(self).__name__}: generator must be a torch.Generator or None, "
                f"got {type(generator).__name__}"
            )
        self.generator = generator
        keep_in_worker(generator)

    def active_generator(self) -> torch.Generator | None:
        """The generator to draw from now (:func:`trivium.core.seeding.transform_generator`).

        Example:
            >>> import torch
            >>> g = torch.Generator()
            >>> RandomModule(g).active_generator() is g  # outside a sample scope and worker
            True
        """
        if is_tracing():  # traced code cannot follow the lookup
            return self.generator
        return transform_generator(self.generator)

    # Randomness helpers: always go through self.generator.

    def _sample(
        self,
        draw: Callable[..., torch.Tensor],
        device: torch.device | None = None,
    ) -> torch.Tensor:
        """``draw(device, generator=...)``: random values from this transform's generator.

        ``draw(where, **generator)`` makes the values on ``where`` and passes
        ``generator`` on to torch's sampling function. Eagerly it gets the generator
        of ``self.active_generator()`` and its device, and the result moves to
        ``device`` (stays where drawn if None). Under ``torch.compile``, which cannot
        trace a ``torch.Generator``, it gets ``device`` and no generator: torch's
        default one (seed compiled pipelines with ``torch.manual_seed``). This is the
        one place where a compiled transform changes its source of randomness.

        Example:
            >>> import torch
            >>> t = RandomModule(generator=torch.Generator().manual_seed(0))
            >>> t._sample(lambda where, **gen: torch.rand(2, device=where, **gen)).shape
            torch.Size([2])
        """
        if is_tracing():
            return draw(device)
        generator = self.active_generator()
        where = torch.device("cpu") if generator is None else generator.device
        out = draw(where, generator=generator)
        return out if device is None else out.to(device, non_blocking=True)

    def _device(self) -> torch.device:
        generator = self.active_generator()
        return torch.device("cpu") if generator is None else generator.device

    def _rand(self, shape: Sequence[int] = ()) -> torch.Tensor:
        """Uniform samples in [0, 1) of the given shape, from ``self.active_generator()``."""
        generator = self.active_generator()
        device = "cpu" if generator is None else generator.device
        return torch.rand(tuple(shape), generator=generator, device=device)

    def _randint(self, low: int, high: int, shape: Sequence[int] = ()) -> torch.Tensor:
        """Integers in [low, high) of the given shape, from ``self.active_generator()``."""
        generator = self.active_generator()
        device = "cpu" if generator is None else generator.device
        return torch.randint(low, high, tuple(shape), generator=generator, device=device)

    def _uniform(self, low: float, high: float) -> float:
        """One float in [low, high), from ``self.active_generator()``."""
        return low + (high - low) * float(self._rand())

    def _randperm(self, n: int) -> list[int]:
        """A random permutation of ``range(n)``, from ``self.active_generator()``."""
        generator = self.active_generator()
        device = "cpu" if generator is None else generator.device
        return torch.randperm(n, generator=generator, device=device).tolist()

    def extra_repr(self) -> str:
        """List the public settings of the module (used by ``repr``).

        Example:
            >>> class Scale(RandomModule):
            ...     def __init__(self, factor):
            ...         super().__init__()
            ...         self.factor = factor
            >>> Scale(2.0)
            Scale(factor=2.0)
        """
        parts = [
            f"{name}={value!r}"
            for name, value in vars(self).items()
            if not name.startswith("_") and name not in _REPR_SKIP and not callable(value)
        ]
        if self.generator is not None:
            parts.append(f"generator=torch.Generator(device={str(self.generator.device)!r})")
        return ", ".join(parts)


class Transform(RandomModule):
    """Base class of every Trivium transform (a :class:`RandomModule`).

    Subclasses implement ``make_params(inputs) -> dict`` (random parameters,
    sampled once per call; the default samples nothing) and
    ``transform(inpt, params)`` (the deterministic kernel), and where the kernel
    cannot be traced as it is, ``transform_traced`` (its form under ``torch.compile``,
    picked by :meth:`active_transform`). ``forward`` accepts one
    input, several inputs, or any nesting of tuples, lists, dicts and namedtuples
    of them (a sample such as ``(image, {"boxes": ..., "labels": ...})``); every
    leaf gets the same params and the output keeps the structure.
    Randomness comes from :class:`RandomModule` (``self._rand``, ``self._randint``,
    ``self._uniform``, ``self._randperm``, or ``self.active_generator()`` passed to
    torch), by the seeding rule of :mod:`trivium.core.seeding`.

    Example:
        >>> import torch
        >>> class Flip(Transform):
        ...     def make_params(self, inputs):
        ...         return {"flip": self._uniform(0.0, 1.0) < 0.5}
        ...     def transform(self, inpt, params):
        ...         return inpt.flip(-1) if params["flip"] else inpt
        >>> t = Flip(generator=torch.Generator().manual_seed(1))
        >>> t(torch.arange(3)).shape
        torch.Size([3])
    """

    def make_params(self, inputs: list[Any]) -> dict[str, Any]:
        """Sample the parameters shared by all ``inputs`` of one call (none by default).

        Example:
            >>> Transform().make_params([1, 2])
            {}
        """
        return {}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """Apply the transform to one input with the given params (subclasses implement it).

        Example:
            >>> class Double(Transform):
            ...     def transform(self, inpt, params):
            ...         return 2 * inpt
            >>> Double().transform(3, {})
            6
        """
        raise NotImplementedError(f"{type(self).__name__} must implement transform()")

    def transform_traced(self, inpt: Any, params: dict[str, Any]) -> Any:
        """The traceable form of :meth:`transform`, run while traced (``torch.compile``).

        Override it when ``transform`` branches in Python on drawn values, keeps
        caches or loops per image: the two forms must give the same result from the
        same params. The default is ``transform`` itself.

        Example:
            >>> class Double(Transform):
            ...     def transform(self, inpt, params):
            ...         return 2 * inpt
            >>> Double().transform_traced(3, {})
            6
        """
        return self.transform(inpt, params)

    def active_transform(self) -> Callable[[Any, dict[str, Any]], Any]:
        """The form to run now: ``transform_traced`` while traced, else ``transform``.

        Traced means :func:`trivium.core.tracing.is_tracing`. Subclasses that override
        ``forward`` call this instead of ``transform``.

        Example:
            >>> t = Transform()
            >>> t.active_transform() == t.transform  # eager
            True
        """
        return self.transform_traced if is_tracing() else self.transform

    def forward(self, *inputs: Any) -> Any:
        """Sample params once and apply ``transform`` to every input.

        Example:
            >>> class Double(Transform):
            ...     def transform(self, inpt, params):
            ...         return 2 * inpt
            >>> Double()(1), Double()(1, 2), Double()([1, 2])
            (2, (2, 4), [2, 4])
            >>> Double()((1, {"a": 2, "b": [3]}))
            (2, {'a': 4, 'b': [6]})
        """
        flat, rebuild = flatten_inputs(self, inputs)
        params = self.make_params(flat)
        transform = self.active_transform()
        return rebuild([transform(inpt, params) for inpt in flat])


class _Fn(nn.Module):
    """Wraps a plain callable so it can sit in an ``nn.ModuleList``."""

    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *inputs: Any) -> Any:
        return self.fn(*inputs)

    def extra_repr(self) -> str:
        return getattr(self.fn, "__qualname__", repr(self.fn))


def _module_list(owner: str, transforms: Any) -> nn.ModuleList:
    """Validate a non-empty sequence of callables and hold it in an ``nn.ModuleList``."""
    if not isinstance(transforms, (Sequence, nn.ModuleList)) or isinstance(transforms, str):
        raise TypeError(
            f"{owner}: transforms must be a sequence of callables, got {type(transforms).__name__}"
        )
    if len(transforms) == 0:
        raise ValueError(f"{owner}: transforms must not be empty")
    for i, t in enumerate(transforms):
        if not callable(t):
            raise TypeError(f"{owner}: transforms[{i}] is not callable: {t!r}")
    return nn.ModuleList(t if isinstance(t, nn.Module) else _Fn(t) for t in transforms)


def check_probability(owner: str, p: Any) -> float:
    """``p`` as a float if it is a probability (a real number in [0, 1]); raises otherwise.

    ``TypeError`` for a non-number (``bool`` included), ``ValueError`` outside [0, 1];
    both name ``owner``.

    Example:
        >>> check_probability("RandomApply", 1)
        1.0
        >>> check_probability("RandomApply", 1.5)
        Traceback (most recent call last):
        ...
        ValueError: RandomApply: p must be in [0, 1], got 1.5
    """
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"{owner}: p must be a number in [0, 1], got {type(p).__name__}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{owner}: p must be in [0, 1], got {p}")
    return float(p)


class Compose(Transform):
    """Apply ``transforms`` one after the other.

    Example:
        >>> t = Compose([lambda x: x + 1, lambda x: x * 10])
        >>> t(1)
        20
    """

    def __init__(self, transforms: Sequence[Callable]) -> None:
        super().__init__()
        self.transforms = _module_list(type(self).__name__, transforms)

    def forward(self, *inputs: Any) -> Any:
        """Run the chain (see the class docstring)."""
        flatten_inputs(self, inputs)  # argument check only
        return _chain(self.transforms, inputs)


class RandomApply(Transform):
    """Apply all of ``transforms`` (in order) with probability ``p``, else nothing.

    Example:
        >>> import torch
        >>> t = RandomApply([lambda x: -x], p=1.0)
        >>> t(3)
        -3
    """

    def __init__(
        self,
        transforms: Sequence[Callable],
        p: float = 0.5,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(generator)
        self.transforms = _module_list(type(self).__name__, transforms)
        self.p = check_probability(type(self).__name__, p)

    def forward(self, *inputs: Any) -> Any:
        """Run the chain or return the inputs unchanged (see the class docstring)."""
        flatten_inputs(self, inputs)
        if self._uniform(0.0, 1.0) >= self.p:
            return inputs if len(inputs) > 1 else inputs[0]
        return _chain(self.transforms, inputs)


class RandomChoice(Transform):
    """Apply one transform picked at random; ``p`` gives (unnormalised) weights.

    Example:
        >>> import torch
        >>> t = RandomChoice([lambda x: x + 1, lambda x: x - 1], p=[0.0, 1.0])
        >>> t(5)
        4
    """

    def __init__(
        self,
        transforms: Sequence[Callable],
        p: Sequence[float] | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(generator)
        self.transforms = _module_list(type(self).__name__, transforms)
        self.p = self._normalise(p, len(self.transforms))

    def _normalise(self, p: Sequence[float] | None, n: int) -> list[float]:
        name = type(self).__name__
        if p is None:
            return [1.0 / n] * n
        if not isinstance(p, Sequence) or len(p) != n:
            raise ValueError(f"{name}: p must be a sequence of {n} weights, got {p!r}")
        weights = torch.tensor([float(w) for w in p], dtype=torch.float64)
        if not bool(torch.isfinite(weights).all()) or bool((weights < 0).any()):
            raise ValueError(f"{name}: weights in p must be finite and >= 0, got {list(p)}")
        total = float(weights.sum())
        if total <= 0:
            raise ValueError(f"{name}: weights in p must not all be zero")
        return [float(w) / total for w in weights]

    def forward(self, *inputs: Any) -> Any:
        """Pick one transform and apply it (see the class docstring)."""
        flatten_inputs(self, inputs)
        generator = self.active_generator()
        device = "cpu" if generator is None else generator.device
        index = int(torch.multinomial(torch.tensor(self.p, device=device), 1, generator=generator))
        return _chain([self.transforms[index]], inputs)


class RandomOrder(Transform):
    """Apply all of ``transforms`` in a random order.

    Example:
        >>> import torch
        >>> t = RandomOrder([lambda x: x + [1], lambda x: x + [2]])
        >>> sorted(t([]))
        [1, 2]
    """

    def __init__(
        self, transforms: Sequence[Callable], generator: torch.Generator | None = None
    ) -> None:
        super().__init__(generator)
        self.transforms = _module_list(type(self).__name__, transforms)

    def forward(self, *inputs: Any) -> Any:
        """Apply every transform, in a freshly drawn order (see the class docstring)."""
        flatten_inputs(self, inputs)
        order = self._randperm(len(self.transforms))
        return _chain([self.transforms[i] for i in order], inputs)


# The names other packages imported before these helpers were public; kept for one release.
_flatten = flatten_inputs
_check_probability = check_probability
