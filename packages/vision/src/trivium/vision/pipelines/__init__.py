"""Training pipelines: image classification and object detection.

* :mod:`~trivium.vision.pipelines.classification` (exported here): a ResNet on an
  ImageFolder tree or Parquet shards;
* :mod:`~trivium.vision.pipelines.detection`: a RetinaNet on a COCO-format folder
  (``from trivium.vision.pipelines.detection import DetectionConfig, train``).

They load data with ``trivium.data.DataLoader``: install the ``pipelines`` extra,
``pip install --find-links dist 'trivium-vision[pipelines]'`` (``dist``: the wheels
``make wheels`` builds).

Example:
    >>> from trivium.vision.pipelines import ClassificationConfig
    >>> ClassificationConfig(data_path="data", epochs=2).epochs
    2
"""

from trivium.vision.pipelines.classification import (
    ClassificationConfig,
    ClassificationPipeline,
    evaluate,
    from_checkpoint,
    train,
)

__all__ = ["ClassificationConfig", "ClassificationPipeline", "evaluate", "from_checkpoint", "train"]
