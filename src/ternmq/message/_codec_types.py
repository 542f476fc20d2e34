"""The classes of the message codec, kept interpreted: its errors, its limits and the msgspec
``Struct`` types of a Map or Stream value.

Theory of operation: ``codec.py`` holds the codec's functions and can be compiled with mypyc
(``setup.py``'s ``COMPILED``; left out today, measured slower compiled); what mypyc cannot take
lives here. A compiled msgspec ``Struct`` loses its class options (``tag=``, ``array_like=``),
the errors subclass the interpreted JMS exception tree (and applications catch them by class),
and ``CodecLimits`` is a slotted frozen dataclass that reads its own ``__slots__``.
``codec.py`` re-exports the public names: import them from there.

Pure module: no I/O, threads, clocks or logging.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar, Final, TypeAlias, Union

from msgspec import Meta, Struct

from ternmq.errors import MessageFormatException
from ternmq.message._types import T

_MIB: Final = 1 << 20


# --------------------------------------------------------------------------- errors


class MessageCodecError(MessageFormatException):
    """A message cannot be encoded or decoded (base of the codec's errors)."""


class MessageDecodeError(MessageCodecError):
    """The octets are not a valid encoded message: truncated, garbage, wrong types, bad tags,
    values outside their Java range, invalid destinations, or an unknown format version."""


class CodecLimitError(MessageDecodeError):
    """A :class:`CodecLimits` bound was exceeded, when encoding or decoding.

    Attributes:
        limit: the name of the :class:`CodecLimits` field, e.g. ``"max_properties"``.
        value: the size found (None when the decoder only knows that it is too large).
        maximum: the configured bound.
    """

    def __init__(self, limit: str, value: int | None, maximum: int, what: str) -> None:
        found = "more" if value is None else str(value)
        super().__init__(
            f"{what}: {found} exceeds the codec limit {limit}={maximum}; "
            f"raise CodecLimits.{limit} on both ends or send less"
        )
        self.limit = limit
        self.value = value
        self.maximum = maximum


# --------------------------------------------------------------------------- limits


@dataclass(frozen=True, slots=True)
class CodecLimits:
    """Bounds on what :func:`encode_message` writes and :func:`decode_message` accepts.

    Give both ends the same limits. Every bound is a positive ``int``; exceeding one raises
    :class:`CodecLimitError` naming it.

    Attributes:
        max_encoded_size: octets of a whole encoded message (default 64 MiB).
        max_body_size: octets of a Bytes or Object body, characters of a Text body
            (default 63 MiB, leaving room for headers and properties).
        max_properties: number of properties (default 1024).
        max_name_length: characters of a property name or a MapMessage entry name
            (default 1024).
        max_map_entries: entries of a MapMessage body (default 65536).
        max_stream_items: fields of a StreamMessage body (default 65536).

    Raises:
        ValueError: a bound is not a positive int.
    """

    max_encoded_size: int = 64 * _MIB
    max_body_size: int = 63 * _MIB
    max_properties: int = 1024
    max_name_length: int = 1024
    max_map_entries: int = 65536
    max_stream_items: int = 65536

    def __post_init__(self) -> None:
        for name in self.__slots__:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"CodecLimits.{name} must be a positive int, not {value!r}")


#: The limits used when none are given.
DEFAULT_LIMITS: Final = CodecLimits()


# --------------------------------------------------------------------------- wire types

Long: TypeAlias = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]


# A Map or Stream value is ``[tag, value]``: one array-like Struct per tag, so that msgspec
# dispatches on the tag and checks the value's type and range in C. Their class attribute
# ``t`` is the tag as a T member.
class VNull(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.NULL)):
    v: None
    t: ClassVar[T] = T.NULL


class VBoolean(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.BOOLEAN)):
    v: bool
    t: ClassVar[T] = T.BOOLEAN


class VByte(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.BYTE)):
    v: Annotated[int, Meta(ge=-(2**7), le=2**7 - 1)]
    t: ClassVar[T] = T.BYTE


class VShort(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.SHORT)):
    v: Annotated[int, Meta(ge=-(2**15), le=2**15 - 1)]
    t: ClassVar[T] = T.SHORT


class VChar(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.CHAR)):
    v: Annotated[str, Meta(min_length=1, max_length=1, pattern="^[\\u0000-\\uffff]$")]
    t: ClassVar[T] = T.CHAR


class VInt(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.INT)):
    v: Annotated[int, Meta(ge=-(2**31), le=2**31 - 1)]
    t: ClassVar[T] = T.INT


class VLong(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.LONG)):
    v: Long
    t: ClassVar[T] = T.LONG


class VFloat(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.FLOAT)):
    v: float  # checked to be a binary32 value after decoding
    t: ClassVar[T] = T.FLOAT


class VDouble(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.DOUBLE)):
    v: float
    t: ClassVar[T] = T.DOUBLE


class VString(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.STRING)):
    v: str
    t: ClassVar[T] = T.STRING


class VBytes(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.BYTES)):
    v: bytes
    t: ClassVar[T] = T.BYTES


BodyValue: TypeAlias = Union[  # noqa: UP007 - a runtime type expression for msgspec
    VNull,
    VBoolean,
    VByte,
    VShort,
    VChar,
    VInt,
    VLong,
    VFloat,
    VDouble,
    VString,
    VBytes,
]
