"""Video classification models with torchvision's builders, module names and state dict keys.

``trivium.vision.models.video`` is the home of what ``torchvision.models.video``
holds: :class:`VideoResNet` (``r3d_18``, ``mc3_18``, ``r2plus1d_18``) and
:class:`S3D` (``s3d``). A model takes clips [N, 3, T, H, W] (channels before time,
as torchvision's) and returns class scores [N, num_classes] (Kinetics-400's 400 by
default). State dicts load to and from torchvision's with ``strict=True``;
``weights=`` takes a local file or a state dict (nothing is downloaded).

Example:
    >>> import torch
    >>> from trivium.vision.models.video import mc3_18
    >>> model = mc3_18(num_classes=4).eval()
    >>> model(torch.zeros(1, 3, 4, 32, 32)).shape
    torch.Size([1, 4])
"""

from trivium.vision.models.video.resnet import VideoResNet, mc3_18, r2plus1d_18, r3d_18
from trivium.vision.models.video.s3d import S3D, s3d

__all__ = ["S3D", "VideoResNet", "mc3_18", "r2plus1d_18", "r3d_18", "s3d"]
