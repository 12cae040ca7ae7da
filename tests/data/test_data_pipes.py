"""IterPipe / MapPipe ops against plain-Python references."""

from __future__ import annotations

import itertools
import random
import threading
import warnings

import pytest
import torch

from trivium.data import IterPipe, MapPipe, SkippedSamplesWarning

DATA = list(range(23))


def pipe(data=DATA) -> IterPipe:
    return IterPipe.from_iterable(data)


def test_map_filter_flatmap_enumerate() -> None:
    assert list(pipe().map(lambda x: x * 3)) == [x * 3 for x in DATA]
    assert list(pipe().filter(lambda x: x % 3 == 1)) == [x for x in DATA if x % 3 == 1]
    assert list(pipe([1, 2, 3]).flatmap(lambda x: range(x))) == [0, 0, 1, 0, 1, 2]
    assert list(pipe("abc").enumerate(5)) == [(5, "a"), (6, "b"), (7, "c")]


def test_map_on_columns() -> None:
    rows = [{"a": i, "b": -i} for i in range(4)]
    got = list(pipe(rows).map(lambda v: v * 10, input_col="a"))
    assert got == [{"a": i * 10, "b": -i} for i in range(4)]
    assert rows[1] == {"a": 1, "b": -1}  # the input rows are left alone
    got = list(pipe(rows).map(lambda ab: ab[0] + ab[1], input_col=["a", "b"], output_col="s"))
    assert [r["s"] for r in got] == [0, 0, 0, 0]
    tuples = list(pipe([(1, "x"), (2, "y")]).map(str.upper, input_col=1))
    assert tuples == [(1, "X"), (2, "Y")]
    assert list(pipe(rows).filter(lambda a: a > 1, input_col="a")) == rows[2:]
    with pytest.raises(ValueError, match="output_col needs input_col"):
        pipe().map(str, output_col="x")


def test_on_error_skip_counts_and_warns() -> None:
    def fragile(x: int) -> int:
        if x % 5 == 0:
            raise ValueError(f"bad sample {x}")
        return x

    mapped = pipe().map(fragile, on_error="skip")
    with pytest.warns(SkippedSamplesWarning, match="5 samples skipped"):
        got = list(mapped)
    assert got == [x for x in DATA if x % 5] and mapped.skipped == 5
    with pytest.raises(ValueError, match="bad sample 0"):
        list(pipe().map(fragile))
    with pytest.raises(ValueError, match="on_error"):
        pipe().map(fragile, on_error="ignore")
    par = pipe().parallel_map(fragile, 3, on_error="skip")
    with pytest.warns(SkippedSamplesWarning):
        assert list(par) == [x for x in DATA if x % 5]
    with pytest.raises(ValueError, match="bad sample 0"):
        list(pipe().parallel_map(fragile, 2))


def test_parallel_map_keeps_order_and_uses_threads() -> None:
    seen: set[int] = set()
    barrier = threading.Barrier(2, timeout=10)

    def work(x: int) -> int:
        seen.add(threading.get_ident())
        if x < 2:
            barrier.wait()  # both first items must run at the same time
        return x * x

    assert list(pipe().parallel_map(work, num_threads=2)) == [x * x for x in DATA]
    assert len(seen) >= 2


def test_batch_unbatch_collate() -> None:
    assert list(pipe().batch(5)) == [DATA[i : i + 5] for i in range(0, 23, 5)]
    assert list(pipe().batch(5, drop_last=True))[-1] == DATA[15:20]
    assert list(pipe().batch(4).unbatch()) == DATA
    out = list(pipe([{"x": 1, "y": 2.0}, {"x": 3, "y": 4.0}]).batch(2).collate())
    assert torch.equal(out[0]["x"], torch.tensor([1, 3]))
    with pytest.raises(ValueError, match="batch_size"):
        pipe().batch(0)


def test_shuffle_is_a_permutation_reproducible_with_seed() -> None:
    a = list(pipe().shuffle(buffer_size=8, seed=3))
    assert sorted(a) == DATA and a != DATA
    assert a == list(pipe().shuffle(buffer_size=8, seed=3))
    shuffled = pipe().shuffle(buffer_size=8, seed=3)
    shuffled.set_epoch(1)
    assert list(shuffled) != a
    # a buffer of 1 cannot reorder anything
    assert list(pipe().shuffle(buffer_size=1, seed=0)) == DATA


def test_shard_header_cycle_cache() -> None:
    parts = [list(pipe().shard(4, i)) for i in range(4)]
    assert sorted(itertools.chain.from_iterable(parts)) == DATA and parts[1] == DATA[1::4]
    assert list(pipe().header(3)) == [0, 1, 2]
    assert list(pipe([1, 2]).cycle(3)) == [1, 2] * 3
    assert list(itertools.islice(pipe([7]).cycle(), 4)) == [7] * 4
    calls = []
    cached = pipe([1, 2, 3]).map(lambda x: calls.append(x) or x).cache()
    assert list(cached) == list(cached) == [1, 2, 3]
    assert calls == [1, 2, 3]


def test_zip_concat_mux() -> None:
    assert list(pipe([1, 2, 3]).zip(pipe("ab"))) == [(1, "a"), (2, "b")]
    assert list(pipe([1]).concat(pipe([2]), [3])) == [1, 2, 3]
    assert list(pipe([1, 2, 3]).mux(pipe([10, 20]), [100, 200, 300])) == [1, 10, 100, 2, 20, 200, 3]


def test_prefetch_keeps_order_and_raises_errors() -> None:
    assert list(pipe().prefetch(3)) == DATA

    def boom(x: int) -> int:
        if x == 7:
            raise KeyError("seven")
        return x

    with pytest.raises(KeyError, match="seven"):
        list(pipe().map(boom).prefetch(2))
    it = iter(pipe(range(10**6)).prefetch(2))  # an abandoned iterator stops its thread
    assert next(it) == 0
    it.close()


def test_bucket_by_length() -> None:
    rng = random.Random(0)
    words = ["x" * rng.randint(1, 40) for _ in range(100)]
    batches = list(pipe(words).bucket_by_length(8, bucket_size=40, seed=1))
    assert sorted(itertools.chain.from_iterable(batches)) == sorted(words)
    for batch in batches:
        assert len(batch) <= 8
        assert [len(w) for w in batch] == sorted(len(w) for w in batch)
    # sorted within each bucket of 40: a batch never spans two buckets
    spans = [max(map(len, b)) - min(map(len, b)) for b in batches]
    assert sum(spans) / len(spans) < 10
    assert batches == list(pipe(words).bucket_by_length(8, bucket_size=40, seed=1))
    dropped = list(pipe(words).bucket_by_length(8, bucket_size=40, drop_last=True, seed=1))
    assert all(len(b) == 8 for b in dropped)


def test_map_pipe() -> None:
    ds = MapPipe(list("abcd")).map(str.upper)
    assert len(ds) == 4 and ds[2] == "C"
    assert ds.__getitems__([3, 0]) == ["D", "A"]
    assert list(ds.to_iter_pipe().enumerate()) == list(enumerate("ABCD"))
    with pytest.raises(TypeError, match="MapPipe needs"):
        MapPipe(iter([1]))  # type: ignore[arg-type]
    loader = torch.utils.data.DataLoader(MapPipe(list(range(6))), batch_size=4, shuffle=True)
    assert sorted(torch.cat(list(loader)).tolist()) == list(range(6))


def test_from_iterable_refuses_one_shot_iterators() -> None:
    with pytest.raises(TypeError, match="re-iterable"):
        IterPipe.from_iterable(iter([1, 2]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(pipe([1]).map(str)) == ["1"]


def test_every_chaining_method_returns_its_registered_op() -> None:
    import inspect

    import trivium.data.pipes as pipes
    from trivium.data import columnar

    methods = {
        "map": pipes.Map, "parallel_map": pipes.ParallelMap, "filter": pipes.Filter,
        "flatmap": pipes.FlatMap, "enumerate": pipes.Enumerate, "batch": pipes.Batch,
        "unbatch": pipes.Unbatch, "bucket_by_length": pipes.BucketByLength,
        "shuffle": pipes.Shuffle, "shard": pipes.Shard, "header": pipes.Header,
        "cycle": pipes.Cycle, "cache": pipes.Cache, "prefetch": pipes.Prefetch,
        "zip": pipes.Zip, "concat": pipes.Concat, "mux": pipes.Mux,
        "map_batches": columnar.MapBatches, "select": columnar.Select,
        "rename": columnar.Rename, "with_column": columnar.WithColumn,
        "to_rows": columnar.ToRows, "to_tensors": columnar.ToTensors,
    }  # fmt: skip
    chaining = {
        name
        for name, fn in inspect.getmembers(IterPipe, inspect.isfunction)
        if "self._chain(" in inspect.getsource(fn)
    }
    assert chaining == set(methods) | {"collate"}
    assert {name: IterPipe._ops[name] for name in methods} == methods
    assert isinstance(pipe().collate(), pipes.Map)
    assert isinstance(pipe().batch(2), pipes.Batch) and isinstance(pipe().cache(), pipes.Cache)


def test_the_node_contract_the_loader_asks_of_ops() -> None:
    # how many source items make one output: 1 through per-item ops, n after batch(n)
    assert pipe().map(str).filter(bool).items_per_output() == 1
    assert pipe().map(str).batch(3).items_per_output() == 3
    assert pipe().batch(2).batch(2).items_per_output() == 4
    assert pipe().flatmap().items_per_output() is None
    assert pipe().batch(2).unbatch().items_per_output() is None
    runs = [pipe().map(str), pipe().filter(bool), pipe().flatmap(), pipe().batch(2),
            pipe().batch(2).unbatch(), pipe().prefetch(2), pipe().parallel_map(str, 2)]  # fmt: skip
    assert all(op.not_exact is None for op in runs)
    carry = [pipe().shuffle(), pipe().header(1), pipe().enumerate(), pipe().cycle(2),
             pipe().cache(), pipe().shard(2, 0), pipe().bucket_by_length(2, str)]  # fmt: skip
    assert all(op.not_exact for op in carry)  # each names the exact alternative


def test_reset_next_and_state_dict_resume_a_pipe() -> None:
    doubled = pipe().filter(lambda x: x % 3).map(lambda x: x * 2)
    first = [doubled.next() for _ in range(5)]
    state = doubled.state_dict()
    rest = list(doubled)[5:]  # iter() is a pass of its own
    again = pipe().filter(lambda x: x % 3).map(lambda x: x * 2)
    again.reset(state)
    assert [again.next() for _ in range(len(rest))] == rest
    assert first + rest == [x * 2 for x in DATA if x % 3]
    with pytest.raises(StopIteration):
        again.next()
    again.reset()
    assert again.next() == first[0]


def test_per_sample_seeds_follow_the_batch_being_read_and_the_op() -> None:
    from trivium.core.seeding import scope_generator
    from trivium.core.skipping import SkipReport
    from trivium.data.origins import reading

    def noise(x: float) -> float:
        return x + torch.rand((), generator=scope_generator()).item()

    def run(p: IterPipe, seed: int) -> list[float]:
        with reading(SkipReport(), seed):
            return list(p)

    noisy = pipe().map(noise)
    first = run(noisy, 7)
    assert first == run(noisy, 7) and first != run(noisy, 8)
    assert all(0 <= v - x < 1 for x, v in zip(DATA, first, strict=True))
    # a second map draws from a stream of its own, not the first one's again
    second = [s - f for s, f in zip(run(noisy.map(noise), 7), first, strict=True)]
    assert second != [f - x for f, x in zip(first, DATA, strict=True)]
