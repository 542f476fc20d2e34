"""The compact binary encoding of a message (format version 1).

Format
------
An encoded message is a 5-octet prefix followed by one MessagePack array. The prefix is the
magic ``C1 54 51`` (``0xC1`` is never valid MessagePack, then ASCII ``TQ``), the format
version (``01``) and the body kind (``00`` Message, ``01`` Text, ``02`` Bytes, ``03`` Map,
``04`` Stream, ``05`` Object). The array always has 15 elements: ``[message_id (str|nil),
timestamp (int), correlation_id as str (str|nil), correlation_id as bytes (bin|nil),
reply_to (str|nil), destination (str|nil), delivery_mode (1|2), redelivered (bool),
type (str|nil), expiration (int), delivery_time (int), priority (0..9), properties (map
name -> bool|int|float|str|nil), property tags (array of T, in the order of the properties
map), body]``. Destinations travel as their ``str()`` form (``queue://NAME``,
``temp-topic://NAME``, …). The body is nil for a Message, str|nil for Text, bin for Bytes,
bin|nil for Object (opaque pickled octets, never unpickled here), a map name -> ``[T, value]``
for Map and an array of ``[T, value]`` for Stream. A typed value's tag is the number of
:class:`~ternmq.message._types.T`; its value is nil (NULL), bool, an int within the Java
range of the tag, a float (FLOAT and DOUBLE both travel as float64; a FLOAT must be a
binary32 value widened exactly), a str (STRING; CHAR is one character in U+0000 … U+FFFF) or
bin (BYTES). Every integer header is a Java long. A decoded message is in the *received*
state (what ``Message._freeze()`` leaves): properties and body read-only, a Bytes or Stream
body in read mode at its start, no acknowledgement hook.

Theory of operation
-------------------
The encoder trusts the model's invariants (its setters validate) and hands the private slots
to a :class:`msgspec.msgpack.Encoder` almost unchanged; it only checks the limits. The
decoder trusts nothing: one typed :class:`msgspec.msgpack.Decoder` per body kind and per
:class:`CodecLimits` checks structure, types, ranges and container sizes in C before anything
large is built, a few Python checks do what msgspec cannot (property tags against values,
binary32 floats, destination names), and the message is assembled with ``cls.__new__`` and
direct slot assignment, without the validating setters. Every failure of the input raises
:class:`MessageDecodeError` or :class:`CodecLimitError`, both ``MessageFormatException``;
no msgspec or Python exception escapes.

Pure module: no I/O, threads, clocks or logging.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Final, Literal, NamedTuple, TypeAlias, Union

import msgspec
from msgspec import Meta, Struct

from ternmq.destination import Destination, destination
from ternmq.errors import InvalidDestinationException, MessageFormatException
from ternmq.message import (
    BytesMessage,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)
from ternmq.message._types import T

__all__ = [
    "DEFAULT_LIMITS",
    "FORMAT_VERSION",
    "MAGIC",
    "CodecLimitError",
    "CodecLimits",
    "MessageCodecError",
    "MessageDecodeError",
    "decode_message",
    "encode_message",
]

#: The first three octets of every encoded message.
MAGIC: Final = b"\xc1TQ"
#: The format version this module writes and reads.
FORMAT_VERSION: Final = 1

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
        value: the size found (None when the decoder only knows it is too large).
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

# The decoders yield the 15-element tuple of the format; its elements are checked by msgspec
# against the per-kind wire type built in _make_decoders.
_Decoder: TypeAlias = "msgspec.msgpack.Decoder[Any]"

_LONG_MIN: Final = -(2**63)
_LONG_MAX: Final = 2**63 - 1
_Long: TypeAlias = Annotated[int, Meta(ge=_LONG_MIN, le=_LONG_MAX)]


# A map or stream value is ``[tag, value]``: one array-like Struct per tag, so that msgspec
# dispatches on the tag and checks the value's type and range in C. Their ``t`` class
# attribute is the tag as a T member.
class _VNull(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.NULL)):
    v: None
    t: ClassVar[T] = T.NULL


class _VBoolean(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.BOOLEAN)):
    v: bool
    t: ClassVar[T] = T.BOOLEAN


class _VByte(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.BYTE)):
    v: Annotated[int, Meta(ge=-(2**7), le=2**7 - 1)]
    t: ClassVar[T] = T.BYTE


class _VShort(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.SHORT)):
    v: Annotated[int, Meta(ge=-(2**15), le=2**15 - 1)]
    t: ClassVar[T] = T.SHORT


class _VChar(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.CHAR)):
    v: Annotated[str, Meta(min_length=1, max_length=1, pattern="^[\\u0000-\\uffff]$")]
    t: ClassVar[T] = T.CHAR


class _VInt(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.INT)):
    v: Annotated[int, Meta(ge=-(2**31), le=2**31 - 1)]
    t: ClassVar[T] = T.INT


class _VLong(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.LONG)):
    v: _Long
    t: ClassVar[T] = T.LONG


class _VFloat(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.FLOAT)):
    v: float  # checked to be a binary32 value after decoding
    t: ClassVar[T] = T.FLOAT


class _VDouble(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.DOUBLE)):
    v: float
    t: ClassVar[T] = T.DOUBLE


class _VString(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.STRING)):
    v: str
    t: ClassVar[T] = T.STRING


class _VBytes(Struct, array_like=True, forbid_unknown_fields=True, tag=int(T.BYTES)):
    v: bytes
    t: ClassVar[T] = T.BYTES


_BodyValue: TypeAlias = Union[  # noqa: UP007 - a runtime type expression for msgspec
    _VNull,
    _VBoolean,
    _VByte,
    _VShort,
    _VChar,
    _VInt,
    _VLong,
    _VFloat,
    _VDouble,
    _VString,
    _VBytes,
]

# Body kinds: the fifth octet of the prefix.
_KIND_MESSAGE: Final = 0
_KIND_TEXT: Final = 1
_KIND_BYTES: Final = 2
_KIND_MAP: Final = 3
_KIND_STREAM: Final = 4
_KIND_OBJECT: Final = 5

_KIND_OF_BODY_TYPE: Final[dict[str, int]] = {
    "message": _KIND_MESSAGE,
    "text": _KIND_TEXT,
    "bytes": _KIND_BYTES,
    "map": _KIND_MAP,
    "stream": _KIND_STREAM,
    "object": _KIND_OBJECT,
}
_KIND_NAMES: Final = ("Message", "TextMessage", "BytesMessage", "MapMessage", "StreamMessage")
_KIND_NAMES_ALL: Final = (*_KIND_NAMES, "ObjectMessage")
_PREFIXES: Final = tuple(MAGIC + bytes((FORMAT_VERSION, kind)) for kind in range(6))
_PREFIX_LEN: Final = 5

# Index of each element of the array, for error messages.
_FIELDS: Final = (
    "message_id",
    "timestamp",
    "correlation_id (str)",
    "correlation_id (bytes)",
    "reply_to",
    "destination",
    "delivery_mode",
    "redelivered",
    "type",
    "expiration",
    "delivery_time",
    "priority",
    "properties",
    "property tags",
    "body",
)
_I_PROPERTIES: Final = 12
_I_TAGS: Final = 13
_I_BODY: Final = 14


# Wire types are built at run time from the limits; through these aliases mypy sees plain
# values rather than type expressions.
_annotated: Any = Annotated
_tuple: Any = tuple
_dict: Any = dict
_list: Any = list


def _body_type(kind: int, limits: CodecLimits) -> object:
    name = _annotated[str, Meta(max_length=limits.max_name_length)]
    if kind == _KIND_MESSAGE:
        return None
    if kind == _KIND_TEXT:
        return _annotated[str, Meta(max_length=limits.max_body_size)] | None
    if kind == _KIND_BYTES:
        return _annotated[bytearray, Meta(max_length=limits.max_body_size)]
    if kind == _KIND_MAP:
        return _annotated[_dict[name, _BodyValue], Meta(max_length=limits.max_map_entries)]
    if kind == _KIND_STREAM:
        return _annotated[_list[_BodyValue], Meta(max_length=limits.max_stream_items)]
    return _annotated[bytes, Meta(max_length=limits.max_body_size)] | None


def _make_decoders(limits: CodecLimits) -> dict[bytes, _Decoder]:
    """One typed decoder per body kind, keyed by the 5-octet prefix it accepts."""
    name = _annotated[str, Meta(max_length=limits.max_name_length)]
    props = _annotated[
        _dict[name, bool | _Long | float | str | None], Meta(max_length=limits.max_properties)
    ]
    tags = _annotated[bytes, Meta(max_length=limits.max_properties)]
    decoders: dict[bytes, _Decoder] = {}
    for kind, prefix in enumerate(_PREFIXES):
        wire = _tuple[
            str | None,  # message_id
            _Long,  # timestamp
            str | None,  # correlation_id as str
            bytes | None,  # correlation_id as bytes
            str | None,  # reply_to
            str | None,  # destination
            Literal[1, 2],  # delivery_mode
            bool,  # redelivered
            str | None,  # type
            _Long,  # expiration
            _Long,  # delivery_time
            _annotated[int, Meta(ge=0, le=9)],  # priority
            props,
            tags,
            _body_type(kind, limits),
        ]
        decoders[prefix] = msgspec.msgpack.Decoder(wire)
    return decoders


_DEFAULT_DECODERS: Final = _make_decoders(DEFAULT_LIMITS)
_DECODER_CACHE: dict[CodecLimits, dict[bytes, _Decoder]] = {DEFAULT_LIMITS: _DEFAULT_DECODERS}
_DECODER_CACHE_SIZE: Final = 16


def _decoders_for(limits: CodecLimits) -> dict[bytes, _Decoder]:
    decoders = _DECODER_CACHE.get(limits)
    if decoders is None:
        if not isinstance(limits, CodecLimits):
            raise TypeError(f"limits must be a CodecLimits, not {type(limits).__name__}")
        decoders = _make_decoders(limits)
        if len(_DECODER_CACHE) >= _DECODER_CACHE_SIZE:
            _DECODER_CACHE.clear()
            _DECODER_CACHE[DEFAULT_LIMITS] = _DEFAULT_DECODERS
        _DECODER_CACHE[limits] = decoders
    return decoders


# --------------------------------------------------------------------------- encoding


def _enc_hook(obj: object) -> object:
    if isinstance(obj, Destination):
        return str(obj)
    raise TypeError(f"values of type {type(obj).__name__} cannot be encoded")


_ENCODER: Final = msgspec.msgpack.Encoder(enc_hook=_enc_hook)


def _check_names(names: Iterable[str], limits: CodecLimits, what: str) -> None:
    longest = max(map(len, names), default=0)
    if longest > limits.max_name_length:
        raise CodecLimitError("max_name_length", longest, limits.max_name_length, what)


def encode_message(msg: Message, *, limits: CodecLimits = DEFAULT_LIMITS) -> bytes:
    """Encode a message (headers, typed properties, body) in the format of this module.

    The message is not changed; its read/write modes and read positions are not encoded.
    An ObjectMessage's pickled octets are carried as they are. Values are taken as the
    model's setters stored them; they are not validated again.

    Args:
        msg: a ternmq message (any of the six classes).
        limits: the bounds to respect; give the decoder the same.

    Raises:
        CodecLimitError: the message exceeds one of ``limits`` (the error names it).
        MessageCodecError: ``msg`` is not a ternmq message or holds a value that cannot be
            encoded (e.g. a foreign destination object or an unpaired surrogate in a string).
    """
    if not isinstance(msg, Message):
        raise MessageCodecError(f"only ternmq messages can be encoded, not {type(msg).__name__}")
    props = msg._properties
    try:
        tags = bytes(map(msg._property_types.__getitem__, props))
    except KeyError as exc:
        raise MessageCodecError(
            f"cannot encode {type(msg).__name__}: property {exc} has no type tag",
            linked_exception=exc,
        ) from None
    if len(props) > limits.max_properties:
        raise CodecLimitError(
            "max_properties", len(props), limits.max_properties, "number of properties"
        )
    body: object
    names: Iterable[str] = ()
    if isinstance(msg, TextMessage):
        kind = _KIND_TEXT
        body = msg._text
        if body is not None and len(body) > limits.max_body_size:
            raise CodecLimitError(
                "max_body_size", len(body), limits.max_body_size, "TextMessage characters"
            )
    elif isinstance(msg, BytesMessage):
        kind = _KIND_BYTES
        body = msg._buffer
        if len(msg._buffer) > limits.max_body_size:
            raise CodecLimitError(
                "max_body_size", len(msg._buffer), limits.max_body_size, "BytesMessage octets"
            )
    elif isinstance(msg, MapMessage):
        kind = _KIND_MAP
        body = names = msg._map
        if len(msg._map) > limits.max_map_entries:
            raise CodecLimitError(
                "max_map_entries", len(msg._map), limits.max_map_entries, "MapMessage entries"
            )
    elif isinstance(msg, StreamMessage):
        kind = _KIND_STREAM
        body = msg._items
        if len(msg._items) > limits.max_stream_items:
            raise CodecLimitError(
                "max_stream_items",
                len(msg._items),
                limits.max_stream_items,
                "StreamMessage fields",
            )
    elif isinstance(msg, ObjectMessage):
        kind = _KIND_OBJECT
        body = msg._payload
        if msg._payload is not None and len(msg._payload) > limits.max_body_size:
            raise CodecLimitError(
                "max_body_size", len(msg._payload), limits.max_body_size, "ObjectMessage octets"
            )
    else:
        kind = _KIND_MESSAGE
        body = None
    cid = msg._correlation_id
    try:
        payload = _ENCODER.encode(
            (
                msg._message_id,
                msg._timestamp,
                None if type(cid) is bytes else cid,
                cid if type(cid) is bytes else None,
                msg._reply_to,
                msg._destination,
                msg._delivery_mode,
                msg._redelivered,
                msg._type,
                msg._expiration,
                msg._delivery_time,
                msg._priority,
                props,
                tags,
                body,
            )
        )
    except (TypeError, ValueError, OverflowError, AttributeError, msgspec.EncodeError) as exc:
        # UnicodeEncodeError is a ValueError; AttributeError: a slot was never set.
        raise MessageCodecError(
            f"cannot encode {type(msg).__name__}: {exc}", linked_exception=exc
        ) from None
    size = len(payload)
    if size > limits.max_name_length:
        # A name of n characters takes at least n octets, so shorter payloads need no check.
        _check_names(props, limits, "length of a property name")
        _check_names(names, limits, "length of a map entry name")
    if size + _PREFIX_LEN > limits.max_encoded_size:
        raise CodecLimitError(
            "max_encoded_size",
            size + _PREFIX_LEN,
            limits.max_encoded_size,
            "encoded message octets",
        )
    return _PREFIXES[kind] + payload


# --------------------------------------------------------------------------- decoding

_DEST_CACHE: dict[str, Destination] = {}
_DEST_CACHE_SIZE: Final = 1024

# Destinations are immutable values, so decoded messages may share them. The cache only ever
# holds successfully parsed names and is emptied when full.


def _parse_destination(text: str, field: str) -> Destination:
    try:
        dest = destination(text)
    except InvalidDestinationException as exc:
        raise MessageDecodeError(
            f"malformed message encoding: {field} is not a valid destination: {exc}",
            linked_exception=exc,
        ) from None
    if len(_DEST_CACHE) >= _DEST_CACHE_SIZE:
        _DEST_CACHE.clear()
    _DEST_CACHE[text] = dest
    return dest


_F32: Final = struct.Struct("<f")
_F64: Final = struct.Struct("<d")


def _is_binary32(value: float) -> bool:
    """True when ``value`` is exactly a binary32 value widened (NaN payloads included)."""
    try:
        narrowed = _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return False
    return bool(_F64.pack(narrowed) == _F64.pack(value))


def _bad(kind: int, what: str) -> MessageDecodeError:
    return MessageDecodeError(f"malformed {_KIND_NAMES_ALL[kind]} encoding: {what}")


# Checking properties against their tags. The tags travel as one octet per property, so the
# octet string is a cheap key: for each distinct one, a plan is made once (and cached) holding
# the Python type each value must have, the T members, and which values need a range or
# binary32 check. Properties have no char or byte[] type.
_PROP_PYTYPE: Final[dict[T, type]] = {
    T.NULL: type(None),
    T.BOOLEAN: bool,
    T.BYTE: int,
    T.SHORT: int,
    T.INT: int,
    T.LONG: int,  # range checked by msgspec
    T.FLOAT: float,
    T.DOUBLE: float,
    T.STRING: str,
}
_NARROW_RANGE: Final[dict[T, tuple[int, int]]] = {
    T.BYTE: (-(2**7), 2**7 - 1),
    T.SHORT: (-(2**15), 2**15 - 1),
    T.INT: (-(2**31), 2**31 - 1),
}


class _Plan(NamedTuple):
    pytypes: list[type]
    tags: tuple[T, ...]
    narrow: tuple[tuple[int, int, int], ...]  # (index, low, high)
    floats: tuple[int, ...]  # indexes of FLOAT values


_PLANS: dict[bytes, _Plan] = {}
_PLANS_SIZE: Final = 4096


def _make_plan(kind: int, key: bytes) -> _Plan:
    tags: list[T] = []
    for i, octet in enumerate(key):
        if octet not in _T_VALUES or T(octet) not in _PROP_PYTYPE:
            raise _bad(kind, f"property tag {octet} at index {i} is not a property type")
        tags.append(T(octet))
    plan = _Plan(
        [_PROP_PYTYPE[t] for t in tags],
        tuple(tags),
        tuple((i, *_NARROW_RANGE[t]) for i, t in enumerate(tags) if t in _NARROW_RANGE),
        tuple(i for i, t in enumerate(tags) if t is T.FLOAT),
    )
    if len(_PLANS) >= _PLANS_SIZE:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


_T_VALUES: Final = frozenset(int(t) for t in T)


def _check_properties(kind: int, props: dict[str, Any], key: bytes) -> dict[str, T]:
    """Check the property values against their tags; return name -> tag."""
    plan = _PLANS.get(key) or _make_plan(kind, key)
    if len(plan.tags) != len(props):
        raise _bad(
            kind,
            f"{len(plan.tags)} property tags for {len(props)} properties (a name repeated, "
            "or the tags do not match the properties map)",
        )
    if list(map(type, props.values())) != plan.pytypes:
        for (name, value), tag in zip(props.items(), plan.tags):
            if type(value) is not _PROP_PYTYPE[tag]:
                raise _bad(
                    kind,
                    f"property {name!r} is tagged {tag.name} but holds "
                    f"{type(value).__name__} {value!r:.40}",
                )
    if plan.narrow or plan.floats:
        values = list(props.values())
        for i, low, high in plan.narrow:
            if not low <= values[i] <= high:
                raise _bad(
                    kind,
                    f"property {list(props)[i]!r} holds {values[i]}, outside the range of "
                    f"{plan.tags[i].name}",
                )
        for i in plan.floats:
            if not _is_binary32(values[i]):
                raise _bad(
                    kind, f"property {list(props)[i]!r} holds {values[i]!r}, not a binary32 FLOAT"
                )
    return dict(zip(props, plan.tags))


def _check_floats(kind: int, fields: list[tuple[T, Any]]) -> None:
    for tag, value in fields:
        if tag is T.FLOAT and not _is_binary32(value):
            raise _bad(kind, f"{value!r} is not a binary32 FLOAT")


_LENGTH_ERROR = re.compile(r"Expected `\w+` of length <= (\d+) - at (`key` in )?`\$\[(\d+)\]`")
_PATH = re.compile(r"`\$\[(\d+)\]")


def _translate(exc: msgspec.ValidationError, kind: int, limits: CodecLimits) -> MessageDecodeError:
    """Turn msgspec's validation error into a limit error or a decode error with context."""
    text = str(exc)
    m = _LENGTH_ERROR.fullmatch(text)
    if m is not None:
        index = int(m.group(3))
        key = m.group(2) is not None
        limit: tuple[str, str] | None = None
        if key and index in (_I_PROPERTIES, _I_BODY):
            limit = ("max_name_length", "length of a name")
        elif index in (_I_PROPERTIES, _I_TAGS):
            limit = ("max_properties", "number of properties")
        elif index == _I_BODY:
            limit = {
                _KIND_MAP: ("max_map_entries", "MapMessage entries"),
                _KIND_STREAM: ("max_stream_items", "StreamMessage fields"),
            }.get(kind, ("max_body_size", f"{_KIND_NAMES_ALL[kind]} body size"))
        if limit is not None:
            err: MessageDecodeError = CodecLimitError(
                limit[0], None, getattr(limits, limit[0]), limit[1]
            )
            err.set_linked_exception(exc)
            return err
    p = _PATH.search(text)
    field = f" in {_FIELDS[int(p.group(1))]}" if p is not None and int(p.group(1)) < 15 else ""
    return MessageDecodeError(
        f"malformed {_KIND_NAMES_ALL[kind]} encoding{field}: {text}", linked_exception=exc
    )


def _bad_prefix(head: bytes) -> MessageDecodeError:
    if len(head) < _PREFIX_LEN and MAGIC.startswith(head[:3]):
        return MessageDecodeError(
            f"truncated message encoding: {len(head)} octets, a message needs at least "
            f"{_PREFIX_LEN + 16}"
        )
    if head[:3] != MAGIC:
        return MessageDecodeError(
            f"not a ternmq message encoding: it starts with {head[:3].hex(' ')}, "
            f"not the magic {MAGIC.hex(' ')}"
        )
    if head[3] != FORMAT_VERSION:
        return MessageDecodeError(
            f"unsupported message encoding version {head[3]}: this ternmq reads version "
            f"{FORMAT_VERSION} only; upgrade the reader or have the writer use version "
            f"{FORMAT_VERSION}"
        )
    return MessageDecodeError(f"unknown body kind {head[4]} in the message encoding (known: 0 … 5)")


def decode_message(
    data: bytes | bytearray | memoryview, *, limits: CodecLimits = DEFAULT_LIMITS
) -> Message:
    """Decode what :func:`encode_message` produced into a new message of the same class.

    The result is in the received state: properties and body read-only, a Bytes/Stream body
    in read mode at its start, no acknowledgement hook (and, for an ObjectMessage, no trusted
    modules: the client sets those).

    Args:
        data: the encoded octets (``bytes``, ``bytearray`` or a ``memoryview`` of octets).
        limits: the bounds to enforce (see :class:`CodecLimits`).

    Raises:
        CodecLimitError: the input exceeds one of ``limits`` (the error names it).
        MessageDecodeError: the input is truncated, not a ternmq message, of an unknown
            format version, or malformed (wrong types, bad tags, values outside their Java
            range, invalid destination strings).
    """
    if type(data) is not bytes:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise MessageDecodeError(
                f"a message encoding is bytes, bytearray or memoryview, not {type(data).__name__}"
            )
        try:
            data = memoryview(data).cast("B")
        except (TypeError, ValueError) as exc:
            raise MessageDecodeError(
                f"a message encoding must be a contiguous buffer of octets: {exc}"
            ) from None
    size = len(data)
    if size > limits.max_encoded_size:
        raise CodecLimitError(
            "max_encoded_size", size, limits.max_encoded_size, "encoded message octets"
        )
    head = bytes(data[:_PREFIX_LEN])
    decoders = _DEFAULT_DECODERS if limits is DEFAULT_LIMITS else _decoders_for(limits)
    decoder = decoders.get(head)
    if decoder is None:
        raise _bad_prefix(head)
    kind = head[4]
    try:
        fields = decoder.decode(
            data[_PREFIX_LEN:] if size < 4096 else memoryview(data)[_PREFIX_LEN:]
        )
    except msgspec.ValidationError as exc:
        raise _translate(exc, kind, limits) from None
    except msgspec.DecodeError as exc:
        raise MessageDecodeError(
            f"malformed {_KIND_NAMES_ALL[kind]} encoding: {exc}", linked_exception=exc
        ) from None
    (mid, ts, cid, cid_bytes, reply_to, dest, mode, redelivered, jms_type, expiration,
     delivery_time, priority, props, tags, body) = fields  # fmt: skip
    if cid_bytes is not None:
        if cid is not None:
            raise _bad(kind, "correlation_id is given both as str and as bytes")
        cid = cid_bytes
    ptypes = _check_properties(kind, props, tags) if tags or props else {}
    if reply_to is not None:
        reply_to = _DEST_CACHE.get(reply_to) or _parse_destination(reply_to, "reply_to")
    if dest is not None:
        dest = _DEST_CACHE.get(dest) or _parse_destination(dest, "destination")

    msg: Message
    if kind == _KIND_TEXT:
        msg = TextMessage.__new__(TextMessage)
        msg._text = body
    elif kind == _KIND_MESSAGE:
        msg = Message.__new__(Message)
    elif kind == _KIND_BYTES:
        msg = BytesMessage.__new__(BytesMessage)
        msg._buffer = body
        msg._pos = 0
    elif kind == _KIND_MAP:
        entries = {name: (v.t, v.v) for name, v in body.items()}
        if _VFloat in map(type, body.values()):
            _check_floats(kind, list(entries.values()))
        msg = MapMessage.__new__(MapMessage)
        msg._map = entries
    elif kind == _KIND_STREAM:
        items = [(v.t, v.v) for v in body]
        if _VFloat in map(type, body):
            _check_floats(kind, items)
        msg = StreamMessage.__new__(StreamMessage)
        msg._items = items
        msg._pos = 0
        msg._partial = None
    else:
        msg = ObjectMessage.__new__(ObjectMessage)
        msg._payload = body
        msg._trusted_modules = None
    msg._message_id = mid
    msg._timestamp = ts
    msg._correlation_id = cid
    msg._reply_to = reply_to
    msg._destination = dest
    msg._delivery_mode = mode
    msg._redelivered = redelivered
    msg._type = jms_type
    msg._expiration = expiration
    msg._delivery_time = delivery_time
    msg._priority = priority
    msg._properties = props
    msg._property_types = ptypes
    msg._read_only_properties = True
    msg._read_only_body = True
    msg._ack_hook = None
    return msg
