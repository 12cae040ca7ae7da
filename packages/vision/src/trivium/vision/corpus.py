"""Deprecated: moved to :mod:`trivium.vision.corpora`; this path goes in the next release."""

from trivium.vision._moved import moved_module

__getattr__ = moved_module(__name__, "trivium.vision.corpora")
