"""Trivium core: what the vision, audio and data packages share.

Devices (``resolve_device``, ``move_to``, ``pin_memory``, ``CUDAPrefetcher``),
``map_tensors`` (the walker over nested tensors that they use), the
``trivium.core.sources`` helpers every loader takes its input through,
``stack_batch`` and ``empty_batch`` (batches made in shared memory inside DataLoader workers),
``BatchSlots`` and ``lend_batch`` (the reused buffers of those batches), the
``Transform`` base (on ``RandomModule``, the seeded randomness of any module) and its
containers, errors, a thread pool for GIL-free native
work, progress bars, seeding, the test for traced code (``is_tracing``,
``ops_intercepted``), and a small training helper (``Trainer``, ``MetricLogger``,
checkpoints with exact resume).

Example:
    >>> import torch
    >>> import trivium.core as tc
    >>> t = tc.Compose([lambda x: x + 1])
    >>> tc.move_to(t(torch.zeros(2)), "cpu")
    tensor([1., 1.])
"""

from trivium.core.batching import BatchSlots, empty_batch, lend_batch, stack_batch
from trivium.core.devices import CUDAPrefetcher, move_to, pin_memory, resolve_device
from trivium.core.errors import (
    DatasetError,
    DecodeError,
    DecodeWarning,
    EmptyInputError,
    EncodeError,
    PathNotFoundError,
    TriviumError,
    UnsupportedFormatError,
)
from trivium.core.forking import ForkSafe, abandon
from trivium.core.progress import progress, progress_enabled
from trivium.core.seeding import make_generator, seed_everything, worker_init_fn
from trivium.core.threads import get_num_threads, get_thread_pool, parallel_map, set_num_threads
from trivium.core.tracing import is_tracing, ops_intercepted
from trivium.core.training import MetricLogger, Trainer, load_checkpoint, save_checkpoint
from trivium.core.transform import (
    Compose,
    RandomApply,
    RandomChoice,
    RandomModule,
    RandomOrder,
    Transform,
)
from trivium.core.trees import map_tensors

__version__ = "0.1.0"

__all__ = [
    "BatchSlots",
    "CUDAPrefetcher",
    "Compose",
    "DatasetError",
    "DecodeError",
    "DecodeWarning",
    "EmptyInputError",
    "EncodeError",
    "ForkSafe",
    "MetricLogger",
    "PathNotFoundError",
    "RandomApply",
    "RandomChoice",
    "RandomModule",
    "RandomOrder",
    "Trainer",
    "Transform",
    "TriviumError",
    "UnsupportedFormatError",
    "__version__",
    "abandon",
    "empty_batch",
    "get_num_threads",
    "get_thread_pool",
    "is_tracing",
    "lend_batch",
    "load_checkpoint",
    "make_generator",
    "map_tensors",
    "move_to",
    "ops_intercepted",
    "parallel_map",
    "pin_memory",
    "progress",
    "progress_enabled",
    "resolve_device",
    "save_checkpoint",
    "seed_everything",
    "set_num_threads",
    "stack_batch",
    "worker_init_fn",
]
