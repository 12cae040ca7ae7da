"""Datasets: ``ImageFolder`` / ``DatasetFolder`` on the native decoders, and torchvision's datasets.

The torchvision datasets (``CIFAR10``, ``MNIST``, ``ImageNet``, ``VOCSegmentation``, ...)
take torchvision's arguments and read its on-disk formats, giving the same samples and
targets (PIL images where torchvision gives them, decoded by :mod:`trivium.vision.io`);
``download=True`` goes through :mod:`trivium.core.download`.

Example:
    >>> import pathlib, tempfile, torch
    >>> from trivium.vision.datasets import ImageFolder
    >>> from trivium.vision.io import write_png
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "cat").mkdir()
    >>> write_png(torch.zeros(3, 4, 6, dtype=torch.uint8), str(root / "cat" / "a.png"))
    >>> image, label = ImageFolder(root)[0]
    >>> image.dtype, image.shape, label
    (torch.uint8, torch.Size([3, 4, 6]), 0)
    >>> FakeData(size=1, image_size=(3, 4, 6))[0][0].size
    (6, 4)
"""

from trivium.vision.datasets._dataset_wrapper import wrap_dataset_for_transforms_v2
from trivium.vision.datasets.caltech import Caltech101
from trivium.vision.datasets.celeba import CSV, CelebA
from trivium.vision.datasets.cifar import CIFAR10, CIFAR100
from trivium.vision.datasets.cityscapes import Cityscapes
from trivium.vision.datasets.coco import (
    COCO_TARGET_KEYS,
    CocoCaptions,
    CocoDetection,
    detection_collate,
)
from trivium.vision.datasets.dtd import DTD
from trivium.vision.datasets.fakedata import FakeData
from trivium.vision.datasets.flowers102 import Flowers102
from trivium.vision.datasets.folder import (
    IMG_EXTENSIONS,
    DatasetFolder,
    DatasetNotFoundError,
    ImageFolder,
    SkippedSamplesWarning,
    default_loader,
    find_classes,
    has_file_allowed_extension,
    is_image_file,
    loader_for,
    make_dataset,
    starts_with_decode,
)
from trivium.vision.datasets.food101 import Food101
from trivium.vision.datasets.gtsrb import GTSRB
from trivium.vision.datasets.imagenet import (
    ImageNet,
    load_meta_file,
    parse_devkit_archive,
    parse_train_archive,
    parse_val_archive,
)
from trivium.vision.datasets.inaturalist import INaturalist
from trivium.vision.datasets.kitti import Kitti
from trivium.vision.datasets.mnist import (
    EMNIST,
    KMNIST,
    MNIST,
    QMNIST,
    FashionMNIST,
    read_image_file,
    read_label_file,
    read_sn3_pascalvincent_tensor,
)
from trivium.vision.datasets.pets import OxfordIIITPet
from trivium.vision.datasets.places365 import Places365
from trivium.vision.datasets.sbd import SBDataset
from trivium.vision.datasets.svhn import STL10, SVHN
from trivium.vision.datasets.utils import (
    ImageFileDataset,
    VisionDataset,
    check_integrity,
    download_resource,
    extract,
    pil_decode,
    pil_loader,
    pil_open,
    require_file,
    require_folder,
    verify_str_arg,
)
from trivium.vision.datasets.video import HMDB51, UCF101, Kinetics
from trivium.vision.datasets.voc import DATASET_YEAR_DICT, VOCDetection, VOCSegmentation
from trivium.vision.datasets.widerface import WIDERFace

__all__ = [
    "CIFAR10",
    "CIFAR100",
    "COCO_TARGET_KEYS",
    "CSV",
    "DATASET_YEAR_DICT",
    "DTD",
    "EMNIST",
    "GTSRB",
    "HMDB51",
    "IMG_EXTENSIONS",
    "KMNIST",
    "MNIST",
    "QMNIST",
    "STL10",
    "SVHN",
    "UCF101",
    "Caltech101",
    "CelebA",
    "Cityscapes",
    "CocoCaptions",
    "CocoDetection",
    "DatasetFolder",
    "DatasetNotFoundError",
    "FakeData",
    "FashionMNIST",
    "Flowers102",
    "Food101",
    "INaturalist",
    "ImageFileDataset",
    "ImageFolder",
    "ImageNet",
    "Kinetics",
    "Kitti",
    "OxfordIIITPet",
    "Places365",
    "SBDataset",
    "SkippedSamplesWarning",
    "VOCDetection",
    "VOCSegmentation",
    "VisionDataset",
    "WIDERFace",
    "check_integrity",
    "default_loader",
    "detection_collate",
    "download_resource",
    "extract",
    "find_classes",
    "has_file_allowed_extension",
    "is_image_file",
    "load_meta_file",
    "loader_for",
    "make_dataset",
    "parse_devkit_archive",
    "parse_train_archive",
    "parse_val_archive",
    "pil_decode",
    "pil_loader",
    "pil_open",
    "read_image_file",
    "read_label_file",
    "read_sn3_pascalvincent_tensor",
    "require_file",
    "require_folder",
    "starts_with_decode",
    "verify_str_arg",
    "wrap_dataset_for_transforms_v2",
]
