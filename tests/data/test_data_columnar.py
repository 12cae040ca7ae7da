"""to_tensors and the columnar ops against pyarrow/NumPy references; zero copy is checked."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import torch

from trivium.data import IterPipe, to_tensors


def buffer_address(arr: pa.Array) -> int:
    return arr.buffers()[1].address + arr.offset * arr.type.bit_width // 8


@pytest.mark.parametrize(
    "dtype",
    [
        pa.int8(),
        pa.uint8(),
        pa.int16(),
        pa.int32(),
        pa.int64(),
        pa.float16(),
        pa.float32(),
        pa.float64(),
    ],
)
def test_numeric_columns_share_memory(dtype: pa.DataType) -> None:
    values = np.arange(40).astype(dtype.to_pandas_dtype())
    arr = pa.array(values, type=dtype).slice(3, 30)
    t = to_tensors(pa.record_batch({"c": arr}))["c"]
    assert t.data_ptr() == buffer_address(arr)
    np.testing.assert_array_equal(t.numpy(), values[3:33])


def test_fixed_size_list_is_a_zero_copy_matrix() -> None:
    values = np.random.default_rng(0).standard_normal((20, 128)).astype(np.float32)
    arr = pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), 128).slice(5, 10)
    t = to_tensors(pa.record_batch({"f": arr}))["f"]
    assert t.shape == (10, 128) and t.dtype == torch.float32
    assert t.data_ptr() == arr.flatten().buffers()[1].address + 5 * 128 * 4
    np.testing.assert_array_equal(t.numpy(), values[5:15])
    nested = pa.FixedSizeListArray.from_arrays(
        pa.FixedSizeListArray.from_arrays(pa.array(np.arange(24, dtype=np.int16)), 3), 4
    )
    assert to_tensors(pa.record_batch({"n": nested}))["n"].tolist() == (
        np.arange(24).reshape(2, 4, 3).tolist()
    )


def test_variable_lists_are_padded_with_lengths() -> None:
    lists = [[1.0, 2.0], [], [3.0, 4.0, 5.0], [6.0]]
    arr = pa.array(lists, pa.list_(pa.float32())).slice(1)
    out = to_tensors(pa.record_batch({"v": arr}))
    assert out["v_lengths"].tolist() == [0, 3, 1]
    assert out["v"].tolist() == [[0, 0, 0], [3, 4, 5], [6, 0, 0]]
    assert out["v"].dtype == torch.float32
    for row, n, ref in zip(out["v"], out["v_lengths"], lists[1:], strict=True):
        assert row[:n].tolist() == ref


@pytest.mark.parametrize("list_type", [pa.list_, pa.large_list])
def test_equal_length_lists_are_a_zero_copy_matrix(list_type: Callable[..., pa.DataType]) -> None:
    values = np.random.default_rng(0).standard_normal((20, 128)).astype(np.float32)
    offsets = pa.array(np.arange(21) * 128, pa.int64() if list_type is pa.large_list else None)
    cls = pa.LargeListArray if list_type is pa.large_list else pa.ListArray
    arr = cls.from_arrays(offsets, pa.array(values.ravel())).slice(5, 10)
    assert arr.type == list_type(pa.float32())
    out = to_tensors(pa.record_batch({"v": arr}))
    assert out["v"].shape == (10, 128) and out["v"].dtype == torch.float32
    assert out["v"].data_ptr() == arr.values.buffers()[1].address + 5 * 128 * 4  # a view
    np.testing.assert_array_equal(out["v"].numpy(), np.stack(arr.to_numpy(zero_copy_only=False)))
    assert out["v_lengths"].tolist() == [128] * 10
    empty = to_tensors(pa.record_batch({"e": pa.array([[], []], pa.list_(pa.int32()))}))
    assert empty["e"].shape == (2, 0) and empty["e_lengths"].tolist() == [0, 0]


def test_ragged_lists_match_rows_padded_one_by_one() -> None:
    rng = np.random.default_rng(1)
    lists = [rng.integers(-9, 9, int(n)).tolist() for n in rng.integers(0, 40, 300)]
    arr = pa.array(lists, pa.list_(pa.int16())).slice(7, 250)
    out = to_tensors(pa.record_batch({"v": arr}))
    width = max(len(x) for x in lists[7:257])
    expected = np.zeros((250, width), np.int16)
    for i, row in enumerate(lists[7:257]):
        expected[i, : len(row)] = row
    np.testing.assert_array_equal(out["v"].numpy(), expected)
    assert out["v"].dtype == torch.int16
    assert out["v_lengths"].tolist() == [len(x) for x in lists[7:257]]


def test_many_binary_rows_match_pyarrow_bytes() -> None:
    rng = np.random.default_rng(2)
    blobs = [rng.bytes(int(n)) for n in rng.integers(0, 50, 500)]
    for arr in (
        pa.array(blobs, pa.binary()).slice(13, 400),
        pa.array(blobs, pa.large_binary()).slice(0, 1),
        pa.array([b"abcd", b"efgh", b"ijkl"], pa.binary(4)).slice(1),
        pa.array([b"", b""], pa.binary()),
        pa.array([], pa.binary()),
    ):
        out = to_tensors(pa.record_batch({"b": arr}))["b"]
        assert isinstance(out, list) and len(out) == len(arr)
        assert [bytes(t.numpy()) for t in out] == arr.to_pylist()
        assert all(t.dtype == torch.uint8 and t.dim() == 1 for t in out)


def test_binary_is_a_list_of_uint8_views() -> None:
    blobs = [b"\xff\xd8abc", b"", b"xyz" * 10, b"\x00"]
    for kind in (pa.binary(), pa.large_binary()):
        arr = pa.array(blobs, kind).slice(1)
        out = to_tensors(pa.record_batch({"b": arr}))["b"]
        assert [bytes(t.numpy()) for t in out] == blobs[1:]
        assert all(t.dtype == torch.uint8 for t in out)
        # the slice keeps the whole data buffer: row 1 of the slice starts after blobs 0 and 1
        assert out[1].data_ptr() == arr.buffers()[2].address + len(blobs[0]) + len(blobs[1])


def test_other_types_and_errors() -> None:
    rb = pa.record_batch(
        {
            "s": ["a", "b"],
            "flag": [True, False],
            "d": pa.array(["x", "y"]).dictionary_encode(),
            "k": pa.array([3, 4]).dictionary_encode(),
        }
    )
    out = to_tensors(rb)
    assert out["s"] == ["a", "b"] and out["d"] == ["x", "y"]
    assert out["flag"].tolist() == [True, False] and out["k"].tolist() == [3, 4]
    with pytest.raises(ValueError, match="column 'n' has 1 nulls"):
        to_tensors(pa.record_batch({"n": [1, None]}))
    with pytest.raises(KeyError, match="no column \\['zz'\\]"):
        to_tensors(rb, ["s", "zz"])
    with pytest.raises(TypeError, match=r"column 'st'.*struct"):
        to_tensors(pa.record_batch({"st": [{"a": 1}]}))
    empty = to_tensors(pa.record_batch({"e": pa.array([], pa.int32())}))
    assert empty["e"].shape == (0,)


def test_table_with_one_chunk_stays_zero_copy() -> None:
    table = pa.table({"x": np.arange(10)})
    t = to_tensors(table)["x"]
    assert t.data_ptr() == buffer_address(table["x"].chunk(0))
    two = pa.concat_tables([table, table])
    assert to_tensors(two)["x"].tolist() == list(range(10)) * 2


def test_columnar_pipe_ops() -> None:
    batches = [
        pa.record_batch({"a": [1, 2], "b": [3.0, 4.0]}),
        pa.record_batch({"a": [5], "b": [6.0]}),
    ]
    src = IterPipe.from_iterable(batches)
    got = list(
        src.with_column("c", pc.field("a") * 2 + pc.field("b"))
        .with_column("a", lambda b: pc.negate(b["a"]))
        .rename({"b": "bee"})
        .select(["c", "a"])
    )
    assert [b.to_pydict() for b in got] == [
        {"c": [5.0, 8.0], "a": [-1, -2]},
        {"c": [16.0], "a": [-5]},
    ]
    assert list(src.map_batches(lambda b: b.num_rows)) == [2, 1]
    assert list(src.to_rows()) == [{"a": 1, "b": 3.0}, {"a": 2, "b": 4.0}, {"a": 5, "b": 6.0}]
    tensors = list(src.to_tensors(["b"]))
    assert [t["b"].tolist() for t in tensors] == [[3.0, 4.0], [6.0]]
    with pytest.raises(KeyError, match="select: no column"):
        list(src.select(["nope"]))
    with pytest.raises(KeyError, match="rename: no column"):
        list(src.rename({"nope": "x"}))
    with pytest.raises(TypeError, match="select needs pyarrow RecordBatches"):
        list(IterPipe.from_iterable([{"a": 1}]).select(["a"]))
    with pytest.raises(TypeError, match="expression must be"):
        list(src.with_column("z", 3))


def test_per_sample_ops_on_batches() -> None:
    """map, filter and flatmap see one row of a batch at a time, as pyarrow's rows give them."""
    rb = pa.record_batch({"x": [1, 2, 3, 4], "s": ["a", "b", "c", "d"]})
    rows = rb.to_pylist()
    source = IterPipe.from_iterable([rb])
    assert list(source.map(lambda r: r["x"] * 10)) == [r["x"] * 10 for r in rows]
    kept = next(iter(source.filter(lambda x: x % 2 == 0, input_col="x")))
    assert kept.to_pylist() == [r for r in rows if r["x"] % 2 == 0]  # still a RecordBatch
    assert (
        list(source.flatmap(lambda r: [r["s"]] * r["x"]))
        == ["a", "b", "b", "c", "c", "c"] + ["d"] * 4
    )

    tensors = source.to_tensors()
    (batch,) = tensors.map(lambda x: x * 2, input_col="x", output_col="y")
    assert batch["y"].tolist() == [2, 4, 6, 8] and batch["x"].tolist() == [1, 2, 3, 4]
    assert batch["s"] == ["a", "b", "c", "d"]
    (batch,) = tensors.map(lambda r: {"x": r["x"] + 1, "t": r["s"] * 2})
    assert batch["x"].tolist() == [2, 3, 4, 5] and batch["t"] == ["aa", "bb", "cc", "dd"]
    assert list(tensors.map(lambda r: r["s"])) == ["a", "b", "c", "d"]  # not dicts: rows
    (batch,) = tensors.filter(lambda r: r["s"] != "b")
    assert batch["x"].tolist() == [1, 3, 4] and batch["s"] == ["a", "c", "d"]
    assert [r["s"] for r in tensors.unbatch()] == ["a", "b", "c", "d"]

    def fragile(x: torch.Tensor) -> torch.Tensor:
        if int(x) == 3:
            raise ValueError("bad sample")
        return x

    pipe = tensors.map(fragile, input_col="x", on_error="skip")
    with pytest.warns(UserWarning, match="1 samples skipped"):
        (batch,) = list(pipe)
    assert batch["x"].tolist() == [1, 2, 4] and batch["s"] == ["a", "b", "d"]
    assert pipe.skipped == 1
    with pytest.raises(ValueError, match="bad sample"):
        list(tensors.map(fragile, input_col="x"))
