"""Training pipelines: image classification and object detection.

* :mod:`~trivium.pipelines.vision.classification` (exported here): a ResNet on an
  ImageFolder tree or Parquet shards;
* :mod:`~trivium.pipelines.vision.detection`: a RetinaNet on a COCO-format folder
  (``from trivium.pipelines.vision.detection import DetectionConfig, train``).

They load data with ``trivium.data.DataLoader`` (``pip install --find-links dist
trivium-pipelines``; ``dist``: the wheels ``make wheels`` builds).

Example:
    >>> from trivium.pipelines.vision import ClassificationConfig
    >>> ClassificationConfig(data_path="data", epochs=2).epochs
    2
"""

from trivium.pipelines.vision.classification import (
    ClassificationConfig,
    ClassificationPipeline,
    evaluate,
    from_checkpoint,
    train,
)

__all__ = ["ClassificationConfig", "ClassificationPipeline", "evaluate", "from_checkpoint", "train"]
