"""Training pipelines: image classification (a ResNet on an ImageFolder tree or Parquet shards).

They load data with ``trivium.data.DataLoader``: ``pip install 'trivium-vision[pipelines]'``.

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
