"""Trivium vision: native image I/O (libjpeg-turbo, libspng) for PyTorch.

Example:
    >>> import trivium.vision
    >>> trivium.vision.__version__
    '0.1.0'
"""

__version__ = "0.1.0"

import importlib
from types import ModuleType

# What ``import torchvision`` makes attributes: ``torchvision.datasets.X`` reads the same
# after ``import trivium.vision as torchvision``. Imported on first use, since they load
# torch and the native library.
_SUBPACKAGES = ("datasets", "io", "models", "ops", "transforms", "tv_tensors", "utils")


def __getattr__(name: str) -> ModuleType:
    """The subpackage ``name`` of :data:`_SUBPACKAGES`, imported on first use.

    Example:
        >>> import trivium.vision as torchvision
        >>> torchvision.datasets.VOCSegmentation.__module__
        'trivium.vision.datasets.voc'
    """
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
