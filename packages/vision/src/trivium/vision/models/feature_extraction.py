"""Intermediate feature maps of a model, for detection and segmentation backbones.

Example:
    >>> import torch
    >>> from trivium.vision.models import resnet18
    >>> body = IntermediateLayerGetter(resnet18(), {"layer2": "c3", "layer4": "c5"})
    >>> {k: tuple(v.shape) for k, v in body(torch.zeros(1, 3, 64, 64)).items()}
    {'c3': (1, 128, 8, 8), 'c5': (1, 512, 2, 2)}
"""

from __future__ import annotations

from collections import OrderedDict

from torch import Tensor, nn

__all__ = ["IntermediateLayerGetter"]


class IntermediateLayerGetter(nn.ModuleDict):
    """Run a model's children in order and return the outputs of some, as torchvision's.

    ``return_layers`` maps names of direct children of ``model`` to the keys of the
    returned ``OrderedDict``. The children are kept, under their names, up to the
    last one returned (the rest, e.g. ``avgpool`` and ``fc``, are dropped), so the
    state dict keys are the model's (``layer1.0.conv1.weight``). This assumes the
    model's forward calls its children once each, in the order they were
    registered, as :class:`~trivium.vision.models.ResNet` does.

    Example:
        >>> import torch
        >>> from trivium.vision.models import resnet50
        >>> body = IntermediateLayerGetter(resnet50(), {"layer1": "0", "layer3": "1"})
        >>> [(k, v.shape[1]) for k, v in body(torch.zeros(1, 3, 32, 32)).items()]
        [('0', 256), ('1', 1024)]
        >>> "fc" in body
        False
    """

    def __init__(self, model: nn.Module, return_layers: dict[str, str]) -> None:
        children = [name for name, _ in model.named_children()]
        unknown = sorted(set(map(str, return_layers)) - set(children))
        if unknown:
            raise ValueError(
                f"return_layers are not present in model: {unknown} (its children: {children})"
            )
        wanted = {str(k): str(v) for k, v in return_layers.items()}
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        remaining = set(wanted)
        for name, module in model.named_children():
            layers[name] = module
            remaining.discard(name)
            if not remaining:
                break
        super().__init__(layers)
        self.return_layers = wanted

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        """The outputs of the returned layers, by their new names, in model order.

        Example:
            >>> import torch
            >>> model = torch.nn.Sequential(torch.nn.Identity(), torch.nn.ReLU())
            >>> out = IntermediateLayerGetter(model, {"0": "raw"})(-torch.ones(1))
            >>> list(out), out["raw"]
            (['raw'], tensor([-1.]))
        """
        out: dict[str, Tensor] = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out[self.return_layers[name]] = x
        return out
