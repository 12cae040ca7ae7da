"""Detection backbones: a ResNet with an FPN on top, as torchvision's ``backbone_utils``.

:func:`resnet_fpn_backbone` builds the ResNet, freezes its first layers and adds a
:class:`~trivium.vision.ops.feature_pyramid_network.FeaturePyramidNetwork`; the result is a
:class:`BackboneWithFPN` whose state dict keys are torchvision's (``body.layer1...``,
``fpn.inner_blocks...``). ``weights=`` takes a local file path or a state dict of
the ResNet (nothing is downloaded).

Example:
    >>> import torch
    >>> backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None)
    >>> [(k, tuple(v.shape)) for k, v in backbone(torch.rand(1, 3, 64, 64)).items()]
    [('0', (1, 256, 16, 16)), ('1', (1, 256, 8, 8)), ('2', (1, 256, 4, 4)), \
('3', (1, 256, 2, 2)), ('pool', (1, 256, 1, 1))]
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from torch import Tensor, nn

from trivium.vision.models import mobilenetv2, mobilenetv3, resnet
from trivium.vision.models.feature_extraction import IntermediateLayerGetter
from trivium.vision.models.weights import Weights
from trivium.vision.ops import FrozenBatchNorm2d
from trivium.vision.ops.feature_pyramid_network import (
    ExtraFPNBlock,
    FeaturePyramidNetwork,
    LastLevelMaxPool,
)

__all__ = ["BackboneWithFPN", "mobilenet_backbone", "resnet_fpn_backbone"]


class BackboneWithFPN(nn.Module):
    """A model's intermediate feature maps (``body``) through an FPN (``fpn``), as torchvision's.

    Args:
        backbone: the model; its children named in ``return_layers`` give the maps
            (see :class:`~trivium.vision.models.IntermediateLayerGetter`).
        return_layers: child name -> name of its feature map.
        in_channels_list: channels of those maps, in order.
        out_channels: channels of every FPN level (``self.out_channels``).
        extra_blocks: levels added after the FPN's (default :class:`LastLevelMaxPool`).
        norm_layer: norm layer of the FPN's convolutions (default none).

    Example:
        >>> import torch
        >>> from trivium.vision.models import resnet18
        >>> m = BackboneWithFPN(resnet18(), {"layer3": "0", "layer4": "1"}, [256, 512], 32)
        >>> [(k, v.shape[1]) for k, v in m(torch.rand(1, 3, 64, 64)).items()]
        [('0', 32), ('1', 32), ('pool', 32)]
    """

    def __init__(
        self,
        backbone: nn.Module,
        return_layers: dict[str, str],
        in_channels_list: list[int],
        out_channels: int,
        extra_blocks: ExtraFPNBlock | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        if extra_blocks is None:
            extra_blocks = LastLevelMaxPool()
        self.body = IntermediateLayerGetter(backbone, return_layers=return_layers)
        self.fpn = FeaturePyramidNetwork(
            in_channels_list=in_channels_list,
            out_channels=out_channels,
            extra_blocks=extra_blocks,
            norm_layer=norm_layer,
        )
        self.out_channels = out_channels

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        """The FPN levels of images ``x`` [N, 3, H, W], highest resolution first.

        Example:
            >>> import torch
            >>> from trivium.vision.models import resnet18
            >>> m = BackboneWithFPN(resnet18(), {"layer4": "c5"}, [512], 8).eval()
            >>> list(m(torch.rand(1, 3, 32, 32)))
            ['c5', 'pool']
        """
        return self.fpn(self.body(x))


def resnet_fpn_backbone(
    *,
    backbone_name: str,
    weights: Weights | None,
    norm_layer: Callable[..., nn.Module] = FrozenBatchNorm2d,
    trainable_layers: int = 3,
    returned_layers: list[int] | None = None,
    extra_blocks: ExtraFPNBlock | None = None,
) -> BackboneWithFPN:
    """A ResNet named ``backbone_name`` with an FPN (256 channels) on top, its first layers frozen.

    Args:
        backbone_name: one of ``resnet18``, ``resnet34``, ``resnet50``, ``resnet101``,
            ``resnet152``, ``resnext50_32x4d``, ``resnext101_32x8d``,
            ``resnext101_64x4d``, ``wide_resnet50_2``, ``wide_resnet101_2``.
        weights: the ResNet's weights, a local file path or a state dict (nothing is
            downloaded), or None for random initialisation.
        norm_layer: the ResNet's norm layer (default
            :class:`~trivium.vision.ops.FrozenBatchNorm2d`, as torchvision's).
        trainable_layers: how many of ``layer4``, ``layer3``, ``layer2``, ``layer1``,
            ``conv1`` (from the last) keep ``requires_grad``; 0 to 5, 5 also ``bn1``.
        returned_layers: which of ``layer1`` .. ``layer4`` feed the FPN (default all).
        extra_blocks: levels added after the FPN's (default ``LastLevelMaxPool``).

    Example:
        >>> m = resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=1)
        >>> sorted({n.split(".")[0] for n, p in m.body.named_parameters() if p.requires_grad})
        ['layer4']
    """
    if backbone_name not in resnet.RESNET_BUILDERS:
        raise ValueError(
            f"backbone_name must be one of {list(resnet.RESNET_BUILDERS)}, got {backbone_name!r}"
        )
    backbone = getattr(resnet, backbone_name)(weights=weights, norm_layer=norm_layer)
    return _resnet_fpn_extractor(backbone, trainable_layers, returned_layers, extra_blocks)


def _resnet_fpn_extractor(
    backbone: resnet.ResNet,
    trainable_layers: int,
    returned_layers: list[int] | None = None,
    extra_blocks: ExtraFPNBlock | None = None,
    norm_layer: Callable[..., nn.Module] | None = None,
    out_channels: int = 256,
) -> BackboneWithFPN:
    """Freeze ``backbone``'s first layers and put an FPN on ``returned_layers`` (torchvision's).

    ``out_channels`` is the pyramid's width (torchvision's is always 256).
    """
    if trainable_layers < 0 or trainable_layers > 5:
        raise ValueError(f"Trainable layers should be in the range [0,5], got {trainable_layers}")
    layers_to_train = ["layer4", "layer3", "layer2", "layer1", "conv1"][:trainable_layers]
    if trainable_layers == 5:
        layers_to_train.append("bn1")
    for name, parameter in backbone.named_parameters():
        if not any(name.startswith(layer) for layer in layers_to_train):
            parameter.requires_grad_(False)
    if extra_blocks is None:
        extra_blocks = LastLevelMaxPool()
    if returned_layers is None:
        returned_layers = [1, 2, 3, 4]
    if not returned_layers or min(returned_layers) <= 0 or max(returned_layers) >= 5:
        raise ValueError(f"Each returned layer should be in the range [1,4]. Got {returned_layers}")
    return_layers = {f"layer{k}": str(v) for v, k in enumerate(returned_layers)}
    in_channels_stage2 = backbone.inplanes // 8
    in_channels_list = [in_channels_stage2 * 2 ** (i - 1) for i in returned_layers]
    return BackboneWithFPN(
        backbone,
        return_layers,
        in_channels_list,
        out_channels,
        extra_blocks=extra_blocks,
        norm_layer=norm_layer,
    )


def _validate_trainable_layers(
    is_trained: bool, trainable_backbone_layers: int | None, max_value: int, default_value: int
) -> int:
    """How many backbone layers to train: all without weights, else the given or default count."""
    if not is_trained:
        if trainable_backbone_layers is not None:
            warnings.warn(
                "Changing trainable_backbone_layers has no effect if "
                "neither weights nor weights_backbone is given, "
                f"falling back to trainable_backbone_layers={max_value} so that all layers "
                "are trainable",
                stacklevel=3,
            )
        trainable_backbone_layers = max_value
    if trainable_backbone_layers is None:
        trainable_backbone_layers = default_value
    if trainable_backbone_layers < 0 or trainable_backbone_layers > max_value:
        raise ValueError(
            f"Trainable backbone layers should be in the range [0,{max_value}], "
            f"got {trainable_backbone_layers}"
        )
    return trainable_backbone_layers


_MOBILENETS = {
    "mobilenet_v2": mobilenetv2.mobilenet_v2,
    "mobilenet_v3_large": mobilenetv3.mobilenet_v3_large,
    "mobilenet_v3_small": mobilenetv3.mobilenet_v3_small,
}


def mobilenet_backbone(
    *,
    backbone_name: str,
    weights: Weights | None,
    fpn: bool,
    norm_layer: Callable[..., nn.Module] = FrozenBatchNorm2d,
    trainable_layers: int = 2,
    returned_layers: list[int] | None = None,
    extra_blocks: ExtraFPNBlock | None = None,
) -> nn.Module:
    """A MobileNet's features, with an FPN on its last stages or a 1x1 conv to 256 channels.

    Args:
        backbone_name: ``mobilenet_v2``, ``mobilenet_v3_large`` or ``mobilenet_v3_small``.
        weights: the MobileNet's weights, a local file path or a state dict, or None.
        fpn: an FPN (a :class:`BackboneWithFPN`) on ``returned_layers``; else the last
            map through a 1x1 convolution (a Sequential with ``out_channels`` 256).
        norm_layer: the MobileNet's norm layer (default ``FrozenBatchNorm2d``).
        trainable_layers: stages left trainable, from the last (0 to the number of stages).
        returned_layers: the stages feeding the FPN (default the last two).
        extra_blocks: levels added after the FPN's (default ``LastLevelMaxPool``).

    Example:
        >>> import torch
        >>> m = mobilenet_backbone(backbone_name="mobilenet_v3_large", weights=None, fpn=True)
        >>> [(k, v.shape[1]) for k, v in m(torch.rand(1, 3, 64, 64)).items()]
        [('0', 256), ('1', 256), ('pool', 256)]
    """
    if backbone_name not in _MOBILENETS:
        raise ValueError(f"backbone_name must be one of {list(_MOBILENETS)}, got {backbone_name!r}")
    backbone = _MOBILENETS[backbone_name](weights=weights, norm_layer=norm_layer)
    return _mobilenet_extractor(backbone, fpn, trainable_layers, returned_layers, extra_blocks)


def _mobilenet_extractor(
    backbone: mobilenetv2.MobileNetV2 | mobilenetv3.MobileNetV3,
    fpn: bool,
    trainable_layers: int,
    returned_layers: list[int] | None = None,
    extra_blocks: ExtraFPNBlock | None = None,
    norm_layer: Callable[..., nn.Module] | None = None,
) -> nn.Module:
    """torchvision's: freeze the first stages of ``backbone.features``, add an FPN or a 1x1 conv."""
    features = backbone.features
    # The strided blocks start the stages C1 .. Cn-1; the first and last layers are C0 and Cn.
    stage_indices = (
        [0]
        + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)]
        + [len(features) - 1]
    )
    num_stages = len(stage_indices)
    if trainable_layers < 0 or trainable_layers > num_stages:
        raise ValueError(
            f"Trainable layers should be in the range [0,{num_stages}], got {trainable_layers}"
        )
    freeze_before = (
        len(features) if trainable_layers == 0 else stage_indices[num_stages - trainable_layers]
    )
    for block in features[:freeze_before]:
        for parameter in block.parameters():
            parameter.requires_grad_(False)
    out_channels = 256
    if not fpn:
        m = nn.Sequential(features, nn.Conv2d(features[-1].out_channels, out_channels, 1))
        m.out_channels = out_channels  # type: ignore[assignment]
        return m
    if extra_blocks is None:
        extra_blocks = LastLevelMaxPool()
    if returned_layers is None:
        returned_layers = [num_stages - 2, num_stages - 1]
    if min(returned_layers) < 0 or max(returned_layers) >= num_stages:
        raise ValueError(
            f"Each returned layer should be in the range [0,{num_stages - 1}], "
            f"got {returned_layers}"
        )
    return_layers = {f"{stage_indices[k]}": str(v) for v, k in enumerate(returned_layers)}
    in_channels_list = [features[stage_indices[i]].out_channels for i in returned_layers]
    return BackboneWithFPN(
        features,
        return_layers,
        in_channels_list,
        out_channels,
        extra_blocks=extra_blocks,
        norm_layer=norm_layer,
    )
