"""Deprecated: import from :mod:`trivium.vision.corpora.detection` (this path goes next release)."""

from trivium.vision._moved import moved_module

__getattr__ = moved_module(__name__, "trivium.vision.corpora.detection")
