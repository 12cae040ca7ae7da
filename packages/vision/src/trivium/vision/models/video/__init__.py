"""Video classification models with torchvision's builders, module names and state dict keys.

``trivium.vision.models.video`` is the home of what ``torchvision.models.video`` holds.
"""

__all__: list[str] = []
