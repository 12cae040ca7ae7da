"""Faster R-CNN (Ren et al., 2015): torchvision's classes, builders, state dict keys and numerics.

:class:`FasterRCNN`, its box heads and the builders ``fasterrcnn_resnet50_fpn``,
``fasterrcnn_resnet50_fpn_v2``, ``fasterrcnn_mobilenet_v3_large_fpn`` and
``fasterrcnn_mobilenet_v3_large_320_fpn`` have the names, arguments and state dict
keys of ``torchvision.models.detection.faster_rcnn``: torchvision's checkpoints load
with ``strict=True`` and a model here computes what torchvision's computes.

``weights=`` and ``weights_backbone=`` take a local file path or a state dict:
nothing is downloaded (so ``weights_backbone`` defaults to None everywhere).

Example:
    >>> import torch
    >>> model = fasterrcnn_mobilenet_v3_large_320_fpn(num_classes=3, min_size=96).eval()
    >>> out = model([torch.rand(3, 96, 128)])
    >>> sorted(out[0]), out[0]["boxes"].shape[1]
    (['boxes', 'labels', 'scores'], 4)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch.nn.functional as F
from torch import Tensor, nn

from trivium.vision.models import mobilenetv3, resnet
from trivium.vision.models.backbone_utils import (
    _mobilenet_extractor,
    _resnet_fpn_extractor,
    _validate_trainable_layers,
)
from trivium.vision.models.detection._utils import (
    checked_backbone,
    overwrite_eps,
    refuse_legacy_arguments,
    weights_and_classes,
)
from trivium.vision.models.detection.generalized_rcnn import GeneralizedRCNN
from trivium.vision.models.detection.roi_heads import RoIHeads
from trivium.vision.models.detection.rpn import RegionProposalNetwork, RPNHead
from trivium.vision.models.detection.transform import _imagenet_transform
from trivium.vision.models.weights import Weights
from trivium.vision.ops import (
    AnchorGenerator,
    Conv2dNormActivation,
    FrozenBatchNorm2d,
    MultiScaleRoIAlign,
)

__all__ = [
    "FastRCNNConvFCHead",
    "FastRCNNPredictor",
    "FasterRCNN",
    "TwoMLPHead",
    "fasterrcnn_mobilenet_v3_large_320_fpn",
    "fasterrcnn_mobilenet_v3_large_fpn",
    "fasterrcnn_resnet50_fpn",
    "fasterrcnn_resnet50_fpn_v2",
]

_CLASS_KEY = "roi_heads.box_predictor.cls_score.weight"


def _default_anchorgen() -> AnchorGenerator:
    anchor_sizes = ((32,), (64,), (128,), (256,), (512,))
    return AnchorGenerator(anchor_sizes, ((0.5, 1.0, 2.0),) * len(anchor_sizes))


class FasterRCNN(GeneralizedRCNN):
    """Faster R-CNN: a backbone, a region proposal network and a Fast R-CNN box head.

    Images are a list of float ``[C, H, W]`` tensors in [0, 1], of any sizes. In
    training, ``model(images, targets)`` takes one dict per image with ``boxes``
    (float ``[N, 4]``, XYXY, ``x1 < x2``, ``y1 < y2``; ``N`` may be 0) and ``labels``
    (int64 ``[N]``) and returns the losses ``loss_classifier``, ``loss_box_reg``,
    ``loss_objectness`` and ``loss_rpn_box_reg``. In eval, ``model(images)`` returns
    one dict per image with ``boxes`` (in the input image's coordinates), ``labels``
    and ``scores``.

    Args:
        backbone: returns a Tensor or an ordered dict of feature maps and has an
            ``out_channels`` attribute (the channels of every map).
        num_classes: classes including the background; None only with ``box_predictor``.
        min_size: images are resized so that their shorter side is this long...
        max_size: ...unless their longer side would then exceed this.
        image_mean: the per-channel mean images are normalised with (default ImageNet's).
        image_std: the per-channel standard deviation (default ImageNet's).
        rpn_anchor_generator: default sizes 32..512, one per FPN level, ratios 0.5, 1, 2.
        rpn_head: default :class:`~trivium.vision.models.detection.RPNHead`.
        rpn_pre_nms_top_n_train: proposals kept per level before NMS in training.
        rpn_pre_nms_top_n_test: the same in eval.
        rpn_post_nms_top_n_train: proposals kept per image after NMS in training.
        rpn_post_nms_top_n_test: the same in eval.
        rpn_nms_thresh: the IoU threshold of the RPN's NMS.
        rpn_fg_iou_thresh: the IoU from which an anchor is positive in training.
        rpn_bg_iou_thresh: the IoU below which an anchor is negative in training.
        rpn_batch_size_per_image: anchors sampled per image for the RPN's losses.
        rpn_positive_fraction: the largest share of positives in that sample.
        rpn_score_thresh: proposals with a lower objectness probability are dropped.
        box_roi_pool: default ``MultiScaleRoIAlign(["0", "1", "2", "3"], 7, 2)``.
        box_head: default :class:`TwoMLPHead` (1024 wide).
        box_predictor: default :class:`FastRCNNPredictor` for ``num_classes``.
        box_score_thresh: detections scoring at most this are dropped.
        box_nms_thresh: the IoU threshold of the per-class NMS.
        box_detections_per_img: detections kept per image.
        box_fg_iou_thresh: the IoU from which a proposal is foreground in training.
        box_bg_iou_thresh: the IoU below which a proposal is background in training.
        box_batch_size_per_image: proposals sampled per image for the box losses.
        box_positive_fraction: the largest share of foreground in that sample.
        bbox_reg_weights: the box coder's weights (default ``(10, 10, 5, 5)``).
        **kwargs: passed to the transform (``size_divisible``, ``fixed_size``).

    Example:
        >>> import torch
        >>> from trivium.vision.models.backbone_utils import resnet_fpn_backbone
        >>> backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None)
        >>> model = FasterRCNN(backbone, num_classes=3, min_size=64, max_size=96).eval()
        >>> [sorted(d) for d in model([torch.rand(3, 64, 80)])]
        [['boxes', 'labels', 'scores']]
    """

    def __init__(
        self,
        backbone: nn.Module,
        num_classes: int | None = None,
        min_size: int = 800,
        max_size: int = 1333,
        image_mean: list[float] | None = None,
        image_std: list[float] | None = None,
        rpn_anchor_generator: AnchorGenerator | None = None,
        rpn_head: nn.Module | None = None,
        rpn_pre_nms_top_n_train: int = 2000,
        rpn_pre_nms_top_n_test: int = 1000,
        rpn_post_nms_top_n_train: int = 2000,
        rpn_post_nms_top_n_test: int = 1000,
        rpn_nms_thresh: float = 0.7,
        rpn_fg_iou_thresh: float = 0.7,
        rpn_bg_iou_thresh: float = 0.3,
        rpn_batch_size_per_image: int = 256,
        rpn_positive_fraction: float = 0.5,
        rpn_score_thresh: float = 0.0,
        box_roi_pool: MultiScaleRoIAlign | None = None,
        box_head: nn.Module | None = None,
        box_predictor: nn.Module | None = None,
        box_score_thresh: float = 0.05,
        box_nms_thresh: float = 0.5,
        box_detections_per_img: int = 100,
        box_fg_iou_thresh: float = 0.5,
        box_bg_iou_thresh: float = 0.5,
        box_batch_size_per_image: int = 512,
        box_positive_fraction: float = 0.25,
        bbox_reg_weights: tuple[float, float, float, float] | None = None,
        **kwargs: Any,
    ) -> None:
        out_channels = _check_parts(
            backbone, num_classes, rpn_anchor_generator, box_roi_pool, box_predictor
        )
        if rpn_anchor_generator is None:
            rpn_anchor_generator = _default_anchorgen()
        if rpn_head is None:
            rpn_head = RPNHead(out_channels, rpn_anchor_generator.num_anchors_per_location()[0])
        rpn = RegionProposalNetwork(
            rpn_anchor_generator,
            rpn_head,
            rpn_fg_iou_thresh,
            rpn_bg_iou_thresh,
            rpn_batch_size_per_image,
            rpn_positive_fraction,
            {"training": rpn_pre_nms_top_n_train, "testing": rpn_pre_nms_top_n_test},
            {"training": rpn_post_nms_top_n_train, "testing": rpn_post_nms_top_n_test},
            rpn_nms_thresh,
            score_thresh=rpn_score_thresh,
        )
        if box_roi_pool is None:
            box_roi_pool = MultiScaleRoIAlign(
                featmap_names=["0", "1", "2", "3"], output_size=7, sampling_ratio=2
            )
        if box_head is None:
            resolution = box_roi_pool.output_size[0]
            box_head = TwoMLPHead(out_channels * resolution**2, 1024)
        if box_predictor is None:
            assert num_classes is not None
            box_predictor = FastRCNNPredictor(1024, num_classes)
        roi_heads = RoIHeads(
            box_roi_pool,
            box_head,
            box_predictor,
            box_fg_iou_thresh,
            box_bg_iou_thresh,
            box_batch_size_per_image,
            box_positive_fraction,
            bbox_reg_weights,
            box_score_thresh,
            box_nms_thresh,
            box_detections_per_img,
        )
        transform = _imagenet_transform(min_size, max_size, image_mean, image_std, **kwargs)
        super().__init__(backbone, rpn, roi_heads, transform)


def _check_parts(
    backbone: nn.Module,
    num_classes: int | None,
    rpn_anchor_generator: object,
    box_roi_pool: object,
    box_predictor: object,
) -> int:
    # torchvision's checks of FasterRCNN's arguments; the backbone's width.
    checked_backbone(backbone)
    if not isinstance(rpn_anchor_generator, AnchorGenerator | None):
        raise TypeError(
            "rpn_anchor_generator should be of type AnchorGenerator or None instead of "
            f"{type(rpn_anchor_generator)}"
        )
    if not isinstance(box_roi_pool, MultiScaleRoIAlign | None):
        raise TypeError(
            f"box_roi_pool should be of type MultiScaleRoIAlign or None instead of "
            f"{type(box_roi_pool)}"
        )
    if num_classes is not None and box_predictor is not None:
        raise ValueError("num_classes should be None when box_predictor is specified")
    if num_classes is None and box_predictor is None:
        raise ValueError("num_classes should not be None when box_predictor is not specified")
    return int(backbone.out_channels)


class TwoMLPHead(nn.Module):
    """Pooled features flattened through two fully connected layers + ReLU (``fc6``, ``fc7``).

    Args:
        in_channels: the flattened input size (channels x pooled height x width).
        representation_size: the width of both layers.

    Example:
        >>> import torch
        >>> TwoMLPHead(8 * 7 * 7, 32)(torch.rand(5, 8, 7, 7)).shape
        torch.Size([5, 32])
    """

    def __init__(self, in_channels: int, representation_size: int) -> None:
        super().__init__()
        self.fc6 = nn.Linear(in_channels, representation_size)
        self.fc7 = nn.Linear(representation_size, representation_size)

    def forward(self, x: Tensor) -> Tensor:
        """``[R, ...]`` pooled features to ``[R, representation_size]``."""
        x = x.flatten(start_dim=1)
        return F.relu(self.fc7(F.relu(self.fc6(x))))


class FastRCNNConvFCHead(nn.Sequential):
    """3x3 conv (+ norm) + ReLU layers, then flattened fully connected + ReLU layers (v2 models).

    Args:
        input_size: the pooled features' ``(channels, height, width)``.
        conv_layers: the channels of each convolution.
        fc_layers: the width of each fully connected layer.
        norm_layer: the convolutions' norm layer (default none).

    Example:
        >>> import torch
        >>> head = FastRCNNConvFCHead((8, 7, 7), [16, 16], [32], norm_layer=nn.BatchNorm2d)
        >>> head(torch.rand(3, 8, 7, 7)).shape
        torch.Size([3, 32])
    """

    def __init__(
        self,
        input_size: tuple[int, int, int],
        conv_layers: list[int],
        fc_layers: list[int],
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        in_channels, in_height, in_width = input_size
        blocks = _conv_blocks(in_channels, conv_layers, norm_layer)
        blocks.append(nn.Flatten())
        previous = (conv_layers[-1] if conv_layers else in_channels) * in_height * in_width
        for width in fc_layers:
            blocks.append(nn.Linear(previous, width))
            blocks.append(nn.ReLU(inplace=True))
            previous = width
        super().__init__(*blocks)
        _init_convs(self)


def _conv_blocks(
    in_channels: int,
    layers: list[int] | tuple[int, ...],
    norm_layer: Callable[..., nn.Module] | None = None,
    dilation: int = 1,
) -> list[nn.Module]:
    """3x3 conv (+ norm) + ReLU blocks, one per entry of ``layers`` (its channels).

    The convolution stacks of the R-CNN heads (box, mask).

    Example:
        >>> [type(b).__name__ for b in _conv_blocks(8, [16, 16])]
        ['Conv2dNormActivation', 'Conv2dNormActivation']
    """
    blocks: list[nn.Module] = []
    previous = in_channels
    for channels in layers:
        blocks.append(
            Conv2dNormActivation(
                previous,
                channels,
                kernel_size=3,
                stride=1,
                padding=dilation,
                dilation=dilation,
                norm_layer=norm_layer,
            )
        )
        previous = channels
    return blocks


def _init_convs(module: nn.Module) -> None:
    """He (fan-out) initialisation of every ``nn.Conv2d`` in ``module``, zero biases.

    Example:
        >>> head = nn.Sequential(nn.Conv2d(2, 2, 3))
        >>> _init_convs(head)
        >>> head[0].bias.tolist()
        [0.0, 0.0]
    """
    for layer in module.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)


class FastRCNNPredictor(nn.Module):
    """Class logits (``cls_score``) and per-class box deltas (``bbox_pred``) of each RoI.

    Args:
        in_channels: the box head's output width.
        num_classes: classes including the background.

    Example:
        >>> import torch
        >>> scores, deltas = FastRCNNPredictor(32, 5)(torch.rand(4, 32))
        >>> scores.shape, deltas.shape
        (torch.Size([4, 5]), torch.Size([4, 20]))
    """

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.cls_score = nn.Linear(in_channels, num_classes)
        self.bbox_pred = nn.Linear(in_channels, num_classes * 4)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``[R, C]`` (or ``[R, C, 1, 1]``) to class logits ``[R, K]`` and deltas ``[R, 4K]``."""
        if x.dim() == 4 and list(x.shape[2:]) != [1, 1]:
            raise ValueError(
                "x has the wrong shape, expecting the last two dimensions to be [1,1] "
                f"instead of {list(x.shape[2:])}"
            )
        x = x.flatten(start_dim=1)
        return self.cls_score(x), self.bbox_pred(x)


# ---------------------------------------------------------------------- builders

_BUILDER_DOC = """
    Args:
        weights: the whole model's weights: a local file path (str or os.PathLike) of
            a state dict saved with ``torch.save`` (torchvision's COCO ``.pth`` files
            are such files), or the state dict itself; None (default): random
            initialisation. Nothing is downloaded: a torchvision weights enum or its
            name raises ``ValueError``. The number of classes follows the weights.
        progress: accepted for torchvision compatibility and ignored.
        num_classes: classes including the background (default 91, COCO's).
        weights_backbone: the backbone's weights (a local path or a state dict), or None.
        trainable_backbone_layers: backbone layers left trainable, from the last (the
            default 3). Without any weights every layer is trainable.
        **kwargs: passed to the model class (``min_size``, ``box_score_thresh``, ...).
"""


def _with_builder_doc(fn: Callable[..., Any]) -> Callable[..., Any]:
    summary, _, example = (fn.__doc__ or "").partition("\n\n")
    fn.__doc__ = f"{summary}\n{_BUILDER_DOC}\n{example}"
    return fn


def _resnet50_fpn(
    weights_backbone: Weights | None,
    trainable_backbone_layers: int | None,
    is_trained: bool,
    frozen_bn: bool,
) -> nn.Module:
    trainable = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    if frozen_bn:
        norm_layer: Callable[..., nn.Module] = FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
        body = resnet.resnet50(weights=weights_backbone, norm_layer=norm_layer)
        return _resnet_fpn_extractor(body, trainable)
    body = resnet.resnet50(weights=weights_backbone)
    return _resnet_fpn_extractor(body, trainable, norm_layer=nn.BatchNorm2d)


def _builder_state(
    name: str,
    weights: Weights | None,
    num_classes: int | None,
    weights_backbone: Weights | None,
    kwargs: dict[str, Any],
    default_classes: int = 91,
) -> tuple[dict[str, Any] | None, int, Weights | None, bool]:
    # (state or None, num_classes, weights_backbone, is_trained): the model's weights hold
    # the backbone's, so weights_backbone is dropped with them.
    refuse_legacy_arguments(name, kwargs)
    state, num_classes = weights_and_classes(
        name, weights, num_classes, _CLASS_KEY, default_classes
    )
    if state is not None:
        weights_backbone = None
    return state, num_classes, weights_backbone, state is not None or weights_backbone is not None


def _loaded(model: FasterRCNN, state: dict[str, Any] | None, zero_eps: bool) -> FasterRCNN:
    # zero_eps: torchvision's v1 COCO weights were trained with FrozenBatchNorm2d eps=0.
    if state is not None:
        model.load_state_dict(state)
        if zero_eps:
            overwrite_eps(model, 0.0)
    return model


def _v2_parts(out_channels: int) -> dict[str, nn.Module]:
    # The v2 recipe's RPN head (two convolutions) and box head (BatchNorm convolutions).
    rpn_anchor_generator = _default_anchorgen()
    rpn_head = RPNHead(
        out_channels, rpn_anchor_generator.num_anchors_per_location()[0], conv_depth=2
    )
    box_head = FastRCNNConvFCHead(
        (out_channels, 7, 7), [256, 256, 256, 256], [1024], norm_layer=nn.BatchNorm2d
    )
    return {
        "rpn_anchor_generator": rpn_anchor_generator,
        "rpn_head": rpn_head,
        "box_head": box_head,
    }


def _rcnn_resnet50_fpn(
    model_class: Callable[..., FasterRCNN],
    name: str,
    weights: Weights | None,
    num_classes: int | None,
    weights_backbone: Weights | None,
    trainable_backbone_layers: int | None,
    kwargs: dict[str, Any],
    v2: bool = False,
    default_classes: int = 91,
    extra: Callable[[dict[str, Any] | None, int], dict[str, Any]] | None = None,
) -> FasterRCNN:
    """An R-CNN on a ResNet-50 FPN: torchvision's v1 (FrozenBatchNorm2d, eps=0 with
    ``weights``) or v2 (:func:`_v2_parts`) recipe; ``extra(state, out_channels)`` gives
    the model class's own arguments (its v2 heads, the keypoints the weights have)."""
    state, num_classes, weights_backbone, is_trained = _builder_state(
        name, weights, num_classes, weights_backbone, kwargs, default_classes
    )
    backbone = _resnet50_fpn(weights_backbone, trainable_backbone_layers, is_trained, not v2)
    parts: dict[str, Any] = _v2_parts(backbone.out_channels) if v2 else {}
    if extra is not None:
        parts.update(extra(state, backbone.out_channels))
    model = model_class(backbone, num_classes=num_classes, **parts, **kwargs)
    return _loaded(model, state, zero_eps=not v2)


_FASTER_RCNN_ARGUMENTS = tuple(inspect.signature(FasterRCNN.__init__).parameters)[1:-1]


def _faster_rcnn_arguments(values: dict[str, Any]) -> dict[str, Any]:
    """:class:`FasterRCNN`'s own arguments (``backbone`` .. ``bbox_reg_weights``) among
    ``values``: what a subclass's ``__init__`` passes on from its ``locals()``.

    Example:
        >>> args = _faster_rcnn_arguments({**dict.fromkeys(_FASTER_RCNN_ARGUMENTS), "x": 1})
        >>> list(args)[:2], "x" in args
        (['backbone', 'num_classes'], False)
    """
    return {name: values[name] for name in _FASTER_RCNN_ARGUMENTS}


@_with_builder_doc
def fasterrcnn_resnet50_fpn(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> FasterRCNN:
    """Faster R-CNN with a ResNet-50 FPN backbone, as torchvision's ``fasterrcnn_resnet50_fpn``.

    With ``weights``, the backbone's FrozenBatchNorm2d layers get ``eps=0``, as
    torchvision sets for its ``COCO_V1`` weights.

    Example:
        >>> model = fasterrcnn_resnet50_fpn(num_classes=5)
        >>> model.roi_heads.box_predictor.cls_score.out_features
        5
    """
    return _rcnn_resnet50_fpn(
        FasterRCNN,
        "fasterrcnn_resnet50_fpn",
        weights,
        num_classes,
        weights_backbone,
        trainable_backbone_layers,
        kwargs,
    )


@_with_builder_doc
def fasterrcnn_resnet50_fpn_v2(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> FasterRCNN:
    """Faster R-CNN v2 (Li et al., 2021): BatchNorm in the FPN and box head, a deeper RPN head.

    As torchvision's ``fasterrcnn_resnet50_fpn_v2``: the RPN head has two 3x3
    convolutions and the box head is a :class:`FastRCNNConvFCHead` (four 256-channel
    convolutions with BatchNorm, one 1024-wide layer).

    Example:
        >>> model = fasterrcnn_resnet50_fpn_v2(num_classes=3)
        >>> len(model.rpn.head.conv), type(model.roi_heads.box_head).__name__
        (2, 'FastRCNNConvFCHead')
    """
    return _rcnn_resnet50_fpn(
        FasterRCNN,
        "fasterrcnn_resnet50_fpn_v2",
        weights,
        num_classes,
        weights_backbone,
        trainable_backbone_layers,
        kwargs,
        v2=True,
    )


def _fasterrcnn_mobilenet_v3_large_fpn(
    name: str,
    weights: Weights | None,
    num_classes: int | None,
    weights_backbone: Weights | None,
    trainable_backbone_layers: int | None,
    kwargs: dict[str, Any],
) -> FasterRCNN:
    state, num_classes, weights_backbone, is_trained = _builder_state(
        name, weights, num_classes, weights_backbone, kwargs
    )
    trainable = _validate_trainable_layers(is_trained, trainable_backbone_layers, 6, 3)
    norm_layer: Callable[..., nn.Module] = FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
    body = mobilenetv3.mobilenet_v3_large(weights=weights_backbone, norm_layer=norm_layer)
    backbone = _mobilenet_extractor(body, True, trainable)
    anchor_sizes = ((32, 64, 128, 256, 512),) * 3
    aspect_ratios = ((0.5, 1.0, 2.0),) * len(anchor_sizes)
    model = FasterRCNN(
        backbone,
        num_classes,
        rpn_anchor_generator=AnchorGenerator(anchor_sizes, aspect_ratios),
        **kwargs,
    )
    return _loaded(model, state, zero_eps=False)


@_with_builder_doc
def fasterrcnn_mobilenet_v3_large_fpn(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> FasterRCNN:
    """Faster R-CNN with a MobileNetV3-Large FPN backbone, as torchvision's (high resolution).

    ``trainable_backbone_layers`` is 0 to 6 here. The defaults differ from
    :class:`FasterRCNN`'s in ``rpn_score_thresh=0.05``, as torchvision's.

    Example:
        >>> model = fasterrcnn_mobilenet_v3_large_fpn(num_classes=3)
        >>> model.rpn.score_thresh, model.transform.min_size
        (0.05, (800,))
    """
    kwargs = {"rpn_score_thresh": 0.05, **kwargs}
    return _fasterrcnn_mobilenet_v3_large_fpn(
        "fasterrcnn_mobilenet_v3_large_fpn",
        weights,
        num_classes,
        weights_backbone,
        trainable_backbone_layers,
        kwargs,
    )


@_with_builder_doc
def fasterrcnn_mobilenet_v3_large_320_fpn(
    *,
    weights: Weights | None = None,
    progress: bool = True,
    num_classes: int | None = None,
    weights_backbone: Weights | None = None,
    trainable_backbone_layers: int | None = None,
    **kwargs: Any,
) -> FasterRCNN:
    """Faster R-CNN with a MobileNetV3-Large FPN backbone for 320 px images, as torchvision's.

    Its defaults: ``min_size=320``, ``max_size=640``, 150 proposals before and after
    the RPN's NMS in eval, ``rpn_score_thresh=0.05``.

    Example:
        >>> model = fasterrcnn_mobilenet_v3_large_320_fpn(num_classes=3)
        >>> model.transform.min_size, model.rpn.post_nms_top_n()
        ((320,), 2000)
    """
    defaults = {
        "min_size": 320,
        "max_size": 640,
        "rpn_pre_nms_top_n_test": 150,
        "rpn_post_nms_top_n_test": 150,
        "rpn_score_thresh": 0.05,
    }
    return _fasterrcnn_mobilenet_v3_large_fpn(
        "fasterrcnn_mobilenet_v3_large_320_fpn",
        weights,
        num_classes,
        weights_backbone,
        trainable_backbone_layers,
        {**defaults, **kwargs},
    )
