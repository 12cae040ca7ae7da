"""``wrap_dataset_for_transforms_v2``: torchvision's call that makes a dataset's samples
what the v2 transforms take.

Trivium's datasets already give those samples (``CocoDetection``'s targets are
tv_tensors), so wrapping only selects the target's keys where a dataset has them and
leaves the classification datasets as they are; scripts written for torchvision keep
the call.

Example:
    >>> import tempfile
    >>> from trivium.vision.corpora import build_detection_corpus
    >>> from trivium.vision.datasets import CocoDetection
    >>> root = build_detection_corpus(tempfile.mkdtemp(), num_train=0, num_val=1)
    >>> ds = CocoDetection(root / "val", root / "annotations" / "instances_val.json")
    >>> wrapped = wrap_dataset_for_transforms_v2(ds, target_keys=["boxes", "masks"])
    >>> sorted(wrapped[0][1]), sorted(ds[0][1])
    (['boxes', 'masks'], ['boxes', 'image_id', 'labels'])
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from typing import TypeVar

from trivium.vision.datasets.cifar import CIFAR10
from trivium.vision.datasets.coco import CocoDetection, _target_keys
from trivium.vision.datasets.folder import DatasetFolder
from trivium.vision.datasets.gtsrb import GTSRB
from trivium.vision.datasets.mnist import MNIST

__all__ = ["wrap_dataset_for_transforms_v2"]

D = TypeVar("D")

# Datasets whose samples torchvision's wrapper leaves as they are: (image, class index).
# ImageFolder and ImageNet are DatasetFolders, CIFAR100 a CIFAR10, FashionMNIST an MNIST.
_CLASSIFICATION = (CIFAR10, DatasetFolder, GTSRB, MNIST)


def wrap_dataset_for_transforms_v2(
    dataset: D, target_keys: str | Collection[str] | None = None
) -> D:
    """``dataset`` with the samples the v2 transforms take, as torchvision's function.

    Args:
        dataset: A dataset with ``target_keys`` (``CocoDetection``) or a classification
            dataset (``ImageFolder``, ``DatasetFolder``, ``ImageNet``, ``CIFAR10``/``100``,
            ``MNIST`` and its variants, ``GTSRB``).
        target_keys: The target's keys, for a dataset with ``target_keys``: None for
            torchvision's default (``image_id``, ``boxes``, ``labels``), ``"all"`` or
            names from ``COCO_TARGET_KEYS``.

    Returns:
        A copy of ``dataset`` giving those keys (``dataset`` itself is unchanged), or a
        classification dataset itself: its samples are already what torchvision's
        wrapper gives.

    Raises:
        TypeError: for a dataset of another kind.
        ValueError: for ``target_keys`` the dataset does not take.

    Example:
        >>> from trivium.vision.datasets import FakeData
        >>> wrap_dataset_for_transforms_v2(FakeData(size=1))
        Traceback (most recent call last):
        ...
        TypeError: wrap_dataset_for_transforms_v2: FakeData is not supported; ...
    """
    if hasattr(dataset, "target_keys"):
        wrapped = copy.copy(dataset)
        wrapped.target_keys = _target_keys(target_keys)
        return wrapped
    name = type(dataset).__name__
    if isinstance(dataset, _CLASSIFICATION):
        if target_keys is not None:
            raise ValueError(
                f"wrap_dataset_for_transforms_v2: target_keys is not supported for {name}, "
                f"got {target_keys!r}"
            )
        return dataset
    supported = sorted(c.__name__ for c in (*_CLASSIFICATION, CocoDetection))
    raise TypeError(
        f"wrap_dataset_for_transforms_v2: {name} is not supported; "
        f"it takes {', '.join(supported)} and their subclasses"
    )
