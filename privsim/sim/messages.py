"""Protocol messages and their wire encoding.

A message is a frozen, slotted, keyword-only dataclass decorated with :func:`message`.
Its fields are plain values (``int``, ``float``, ``bool``, ``str``, ``bytes``, tuples of
ints) or NumPy arrays, which are made read-only on construction so that a sent array
cannot be changed under the receiver's feet.

:func:`encode` turns a message into the exact bytes that travel (inside an AES-GCM
envelope when encryption is on); :func:`wire_size` gives ``len(encode(m))`` without
building the bytes, so the trace's byte counts are the same with and without encryption
apart from the envelope's nonce and tag.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import struct
from typing import Any, ClassVar, TypeVar

import numpy as np

__all__ = ["Message", "MessageCodecError", "decode", "encode", "message", "wire_size"]

_TAG = struct.Struct("<I")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")

_REGISTRY: dict[int, type[Any]] = {}


class MessageCodecError(ValueError):
    """A byte string is not a valid encoding of a registered message."""


class Message:
    """Marker base class: every protocol message derives from it."""

    __slots__ = ()
    type_tag: ClassVar[int]
    wire_fields: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        _freeze_arrays(self)


M = TypeVar("M", bound=type[Message])


def _freeze_arrays(self: Any) -> None:
    for name in type(self).wire_fields:
        value = getattr(self, name)
        if isinstance(value, np.ndarray) and value.flags.writeable:
            frozen = value.view()
            frozen.flags.writeable = False
            object.__setattr__(self, name, frozen)


def message(cls: M) -> M:
    """Register a frozen, slotted, keyword-only dataclass as a wire message.

    Subclasses of :class:`Message` that define ``__post_init__`` must call
    ``super().__post_init__()`` so their arrays are frozen.
    """
    if not (dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen):  # type: ignore[attr-defined]
        raise TypeError(f"{cls.__name__} must be a frozen dataclass")
    tag = int.from_bytes(
        hashlib.blake2b(f"{cls.__module__}.{cls.__qualname__}".encode(), digest_size=4).digest(),
        "little",
    )
    if tag in _REGISTRY and _REGISTRY[tag] is not cls:
        raise TypeError(f"message tag collision for {cls.__qualname__}")
    _REGISTRY[tag] = cls
    cls.type_tag = tag
    cls.wire_fields = tuple(f.name for f in dataclasses.fields(cls))
    return cls


def _value_size(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return 3 + _dtype_size(value.dtype) + 4 * value.ndim + value.nbytes
    if isinstance(value, bool):
        return 2
    if isinstance(value, int | float):
        return 9
    if isinstance(value, str):
        return 5 + len(value.encode("utf-8"))
    if isinstance(value, bytes):
        return 5 + len(value)
    if isinstance(value, tuple):
        return 5 + sum(_value_size(v) for v in value)
    if value is None:
        return 1
    raise MessageCodecError(f"cannot encode a field of type {type(value).__name__}")


@functools.lru_cache(maxsize=64)
def _dtype_size(dtype: np.dtype[Any]) -> int:
    """The bytes naming ``dtype`` in an encoding (its ``str``, e.g. ``<u4``)."""
    return len(dtype.str)


def wire_size(msg: Message) -> int:
    """``len(encode(msg))``, computed without building the bytes."""
    size = _TAG.size
    for name in type(msg).wire_fields:
        size += _value_size(getattr(msg, name))
    return size


def _encode_value(value: Any, out: list[bytes]) -> None:
    if isinstance(value, np.ndarray):
        dt = value.dtype.str.encode("ascii")
        out.append(b"a" + bytes([len(dt)]) + dt + bytes([value.ndim]))
        out.append(struct.pack(f"<{value.ndim}I", *value.shape))
        out.append(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, bool):
        out.append(b"?" + (b"\x01" if value else b"\x00"))
    elif isinstance(value, int):
        out.append(b"i" + _I64.pack(value))
    elif isinstance(value, float):
        out.append(b"f" + _F64.pack(value))
    elif isinstance(value, str):
        raw = value.encode("utf-8")
        out.append(b"s" + _U32.pack(len(raw)) + raw)
    elif isinstance(value, bytes):
        out.append(b"b" + _U32.pack(len(value)) + value)
    elif isinstance(value, tuple):
        out.append(b"t" + _U32.pack(len(value)))
        for v in value:
            _encode_value(v, out)
    elif value is None:
        out.append(b"n")
    else:
        raise MessageCodecError(f"cannot encode a field of type {type(value).__name__}")


def encode(msg: Message) -> bytes:
    """The bytes of ``msg`` on the wire (before any channel encryption)."""
    out = [_TAG.pack(type(msg).type_tag)]
    for name in type(msg).wire_fields:
        _encode_value(getattr(msg, name), out)
    return b"".join(out)


def _decode_value(buf: memoryview, pos: int) -> tuple[Any, int]:
    kind = bytes(buf[pos : pos + 1])
    pos += 1
    if kind == b"a":
        n = buf[pos]
        dtype = np.dtype(bytes(buf[pos + 1 : pos + 1 + n]).decode("ascii"))
        pos += 1 + n
        ndim = buf[pos]
        pos += 1
        shape = struct.unpack_from(f"<{ndim}I", buf, pos)
        pos += 4 * ndim
        count = int(np.prod(shape, dtype=np.int64))
        nbytes = count * dtype.itemsize
        if pos + nbytes > len(buf):
            raise MessageCodecError("truncated array")
        arr = np.frombuffer(buf[pos : pos + nbytes], dtype=dtype).reshape(shape)
        return arr, pos + nbytes
    if kind == b"?":
        return buf[pos] == 1, pos + 1
    if kind == b"i":
        return _I64.unpack_from(buf, pos)[0], pos + 8
    if kind == b"f":
        return _F64.unpack_from(buf, pos)[0], pos + 8
    if kind in (b"s", b"b"):
        (n,) = _U32.unpack_from(buf, pos)
        raw = bytes(buf[pos + 4 : pos + 4 + n])
        return (raw.decode("utf-8") if kind == b"s" else raw), pos + 4 + n
    if kind == b"t":
        (n,) = _U32.unpack_from(buf, pos)
        pos += 4
        items = []
        for _ in range(n):
            v, pos = _decode_value(buf, pos)
            items.append(v)
        return tuple(items), pos
    if kind == b"n":
        return None, pos
    raise MessageCodecError(f"unknown field kind {kind!r}")


def decode(data: bytes) -> Message:
    """Inverse of :func:`encode`; arrays are read-only views of ``data``."""
    buf = memoryview(data)
    try:
        (tag,) = _TAG.unpack_from(buf, 0)
        cls = _REGISTRY[tag]
        pos = _TAG.size
        values = {}
        for name in cls.wire_fields:
            values[name], pos = _decode_value(buf, pos)
    except (KeyError, struct.error, IndexError, ValueError, TypeError) as exc:
        raise MessageCodecError(f"not a valid message encoding: {exc}") from exc
    if pos != len(buf):
        raise MessageCodecError("trailing bytes after message")
    return cls(**values)  # type: ignore[no-any-return]
