"""Trivium pipelines: what builds on more than one library, and that no library imports.

- :mod:`trivium.pipelines.vision`: image classification (ResNet) and RetinaNet
  detection training, on ``trivium.vision`` with ``trivium.data``'s loader;
- :mod:`trivium.pipelines.audio`: Wav2Letter ASR, the WaveRNN vocoder and Conv-TasNet
  separation, on ``trivium.audio``;
- :mod:`trivium.pipelines.convert`: class-per-folder trees of images or audio to
  Parquet shards (the ``trivium-data convert`` command, :mod:`trivium.pipelines.cli`);
- :mod:`trivium.pipelines.ray`: the same shards read, decoded and written on a Ray
  cluster.

Example:
    >>> from trivium.pipelines import convert
    >>> convert.convert_image_folder.__name__
    'convert_image_folder'
"""

__all__: list[str] = []
