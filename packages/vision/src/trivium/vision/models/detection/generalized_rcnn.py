"""The R-CNN framework: transform, backbone, region proposals, RoI heads (torchvision's layout).

:class:`GeneralizedRCNN` is the base of :class:`~trivium.vision.models.detection.FasterRCNN`,
``MaskRCNN`` and ``KeypointRCNN``: it checks the targets, runs the transform, the
backbone, the RPN and the RoI heads, and maps the detections back to the input sizes.

Example:
    >>> import torch
    >>> from trivium.vision.models.detection import fasterrcnn_resnet50_fpn
    >>> model = fasterrcnn_resnet50_fpn(num_classes=3, min_size=64, max_size=64)
    >>> isinstance(model, GeneralizedRCNN)
    True
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from trivium.vision.models.detection._utils import checked_targets, prepared_batch

__all__ = ["GeneralizedRCNN"]


class GeneralizedRCNN(nn.Module):
    """Transform, backbone, RPN and RoI heads: losses in training, detections in eval.

    Images are a list of float ``[C, H, W]`` tensors in [0, 1] (or one ``[N, C, H, W]``
    batch), of any sizes. Training takes one target dict per image (``boxes`` float
    ``[N, 4]`` XYXY with positive sizes, ``labels`` int64 ``[N]``, and what the heads
    need: ``masks``, ``keypoints``); bad targets raise ``ValueError`` / ``TypeError``
    naming the image. Eval returns one dict per image in the input's coordinates;
    targets passed in eval are ignored.

    Args:
        backbone: the feature extractor (a Tensor or an ordered dict of maps).
        rpn: proposes boxes (:class:`~trivium.vision.models.detection.RegionProposalNetwork`).
        roi_heads: classifies and refines them (:class:`~trivium.vision.models.detection.RoIHeads`).
        transform: resizes and batches the images
            (:class:`~trivium.vision.models.detection.GeneralizedRCNNTransform`).

    Example:
        >>> import torch
        >>> from trivium.vision.models.detection import fasterrcnn_resnet50_fpn
        >>> model = fasterrcnn_resnet50_fpn(num_classes=3, min_size=64, max_size=64)
        >>> t = [{"boxes": torch.tensor([[4.0, 4.0, 40.0, 30.0]]), "labels": torch.tensor([2])}]
        >>> sorted(model([torch.rand(3, 64, 64)], t))
        ['loss_box_reg', 'loss_classifier', 'loss_objectness', 'loss_rpn_box_reg']
    """

    def __init__(
        self, backbone: nn.Module, rpn: nn.Module, roi_heads: nn.Module, transform: nn.Module
    ) -> None:
        super().__init__()
        self.transform = transform
        self.backbone = backbone
        self.rpn = rpn
        self.roi_heads = roi_heads

    def _num_classes(self) -> int | None:
        predictor = getattr(self.roi_heads, "box_predictor", None)
        score = getattr(predictor, "cls_score", None)
        return getattr(score, "out_features", None)

    def _checked_targets(self, targets: Any, num_images: int) -> list[dict[str, Tensor]]:
        """The targets checked for boxes and labels (subclasses check what their heads need)."""
        return checked_targets(targets, num_images, self._num_classes())

    def forward(
        self, images: list[Tensor], targets: list[dict[str, Tensor]] | None = None
    ) -> dict[str, Tensor] | list[dict[str, Tensor]]:
        """Training: the losses for ``targets``. Eval: the detections of each image.

        Example:
            >>> import torch
            >>> from trivium.vision.models.detection import fasterrcnn_resnet50_fpn
            >>> model = fasterrcnn_resnet50_fpn(num_classes=2, min_size=64, max_size=64).eval()
            >>> [sorted(d) for d in model([torch.rand(3, 48, 64)])]
            [['boxes', 'labels', 'scores']]
        """
        image_list, checked, original_image_sizes, features = prepared_batch(self, images, targets)
        proposals, proposal_losses = self.rpn(image_list, features, checked)
        detections, detector_losses = self.roi_heads(
            features, proposals, image_list.image_sizes, checked
        )
        if self.training:
            return {**detector_losses, **proposal_losses}
        return self.transform.postprocess(detections, image_list.image_sizes, original_image_sizes)
