"""Semantic segmentation models with torchvision's builders, module names and state dict keys.

``trivium.vision.models.segmentation`` is the home of what
``torchvision.models.segmentation`` holds.
"""

__all__: list[str] = []
