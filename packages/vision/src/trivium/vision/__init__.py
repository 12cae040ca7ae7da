"""Trivium vision: native image I/O (libjpeg-turbo, libspng) for PyTorch.

Example:
    >>> import trivium.vision
    >>> trivium.vision.__version__
    '0.1.0'
"""

__version__ = "0.1.0"
