"""``IterPipe`` and ``MapPipe``: datasets composed by chaining, as torchdata's DataPipes.

An ``IterPipe`` is a ``torch.utils.data.IterableDataset``; every chained op returns a
new pipe that wraps the one before it and only pulls items from it (nothing runs
until iterated). :class:`trivium.data.DataLoader` runs the graph as built, one batch
of the epoch's exact order at a time, over the pipe's source.

The modules, by concern: ``base`` (``IterPipe``, the chaining API, ``register_op``),
``items`` (``map``, ``parallel_map``, ``filter``, ``flatmap``, ``enumerate``),
``grouping`` (``batch``, ``unbatch``, ``bucket_by_length``), ``order`` (``shuffle``,
``shard``), ``flow`` (``header``, ``cycle``, ``cache``, ``prefetch``), ``combine``
(``zip``, ``concat``, ``mux``) and ``map_style`` (``MapPipe``); the columnar ops are
in :mod:`trivium.data.columnar`.

Example:
    >>> from trivium.data import IterPipe
    >>> pipe = IterPipe.from_iterable(range(10)).filter(lambda x: x % 2).map(lambda x: x * 10)
    >>> list(pipe.batch(2))
    [[10, 30], [50, 70], [90]]
"""

from trivium.core.errors import SkippedSamplesWarning
from trivium.data.pipes.base import IterPipe, register_op
from trivium.data.pipes.combine import Concat, Mux, Zip
from trivium.data.pipes.flow import Cache, Cycle, Header, Prefetch
from trivium.data.pipes.grouping import Batch, BucketByLength, Unbatch
from trivium.data.pipes.items import Enumerate, Filter, FlatMap, Map, ParallelMap
from trivium.data.pipes.map_style import MapPipe
from trivium.data.pipes.order import Shard, Shuffle

__all__ = [
    "Batch",
    "BucketByLength",
    "Cache",
    "Concat",
    "Cycle",
    "Enumerate",
    "Filter",
    "FlatMap",
    "Header",
    "IterPipe",
    "Map",
    "MapPipe",
    "Mux",
    "ParallelMap",
    "Prefetch",
    "Shard",
    "Shuffle",
    "SkippedSamplesWarning",
    "Unbatch",
    "Zip",
    "register_op",
]
