from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from privsim.sim.messages import Message, MessageCodecError, decode, encode, message, wire_size


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Sample(Message):
    values: np.ndarray
    count: int
    label: str
    ids: tuple[int, ...]
    scale: float
    flag: bool


@given(
    values=hnp.arrays(
        dtype=st.sampled_from([np.uint64, np.float64, np.uint8]), shape=hnp.array_shapes(max_dims=3)
    ),
    count=st.integers(-(2**63), 2**63 - 1),
    label=st.text(max_size=20),
    ids=st.lists(st.integers(0, 2**40), max_size=5).map(tuple),
    scale=st.floats(allow_nan=False),
    flag=st.booleans(),
)
def test_encode_decode_round_trip_and_wire_size(values, count, label, ids, scale, flag):
    msg = Sample(values=values, count=count, label=label, ids=ids, scale=scale, flag=flag)
    raw = encode(msg)
    assert len(raw) == wire_size(msg)
    back = decode(raw)
    assert isinstance(back, Sample)
    np.testing.assert_array_equal(back.values, values)
    assert back.values.dtype == values.dtype
    assert (back.count, back.label, back.ids, back.scale, back.flag) == (
        count,
        label,
        ids,
        scale,
        flag,
    )


def test_arrays_are_read_only_once_sent():
    arr = np.zeros(3)
    msg = Sample(values=arr, count=0, label="", ids=(), scale=0.0, flag=False)
    with pytest.raises(ValueError):
        msg.values[0] = 1.0


def test_garbage_is_rejected():
    with pytest.raises(MessageCodecError):
        decode(b"\x00\x01\x02\x03garbage")
    raw = encode(Sample(values=np.zeros(2), count=1, label="x", ids=(), scale=1.0, flag=True))
    with pytest.raises(MessageCodecError):
        decode(raw + b"\x00")
