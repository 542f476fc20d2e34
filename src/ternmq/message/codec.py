"""The compact binary encoding of a message (format version 1).

Format
------
An encoded message is one MessagePack array of 15 elements, so it always starts with the
six octets ``9F A4 54 51 31 k``: a fixarray of 15 whose first element is the 4-character
str ``"TQ1k"``: magic ``TQ``, format version ``1``, body kind ``k`` (``n`` Message, ``t``
Text, ``b`` Bytes, ``m`` Map, ``s`` Stream, ``o`` Object). The other elements are, in order:
message_id (str|nil), timestamp (int), correlation_id (str, or a 1-element array holding a
bin for the bytes form, or nil), reply_to and destination (each the destination's ``str()``
form such as ``queue://NAME`` or ``temp-topic://NAME``, or nil), delivery_mode (1|2),
redelivered (bool), type (str|nil), expiration and delivery_time (int), priority (0..9),
the properties (map name -> nil|bool|int|float|str), the property types (map name -> tag,
same names) and the body: nil for Message, str|nil for Text, bin for Bytes, bin|nil for
Object (the pickled octets, carried opaque), a map name -> ``[tag, value]`` for Map and an
array of ``[tag, value]`` for Stream. A tag is the number of
:class:`~ternmq.message._types.T`; its value is nil (NULL), bool, an int within the Java
range of the tag, a float64 (DOUBLE, and FLOAT holding a binary32 value widened exactly), a
str (STRING; CHAR: one character in U+0000 … U+FFFF) or a bin (BYTES). Integer headers are
Java longs. A decoded message is in the *received* state (what ``Message._freeze()``
leaves): properties and body read-only, a Bytes or Stream body in read mode at its start,
no acknowledgement hook.

Theory of operation
-------------------
The encoder trusts the model's invariants (its setters validate), hands the private slots
to a :class:`msgspec.msgpack.Encoder` almost unchanged and checks the limits. The decoder
trusts nothing. One typed :class:`msgspec.msgpack.Decoder` per body kind and per
:class:`CodecLimits`, chosen by the six leading octets, checks structure, types, ranges and
container sizes in C before anything large is built, leaving the two property maps raw.
The property-types map then picks how the properties are decoded: generically with the
checks in Python the first time a set of names and types is seen, and from the second time
on by a decoder specialised to that set (a TypedDict), which checks every value in C; both
paths accept the same inputs. Python checks what msgspec cannot (binary32 floats,
destination names) and assembles the message with ``cls.__new__`` and direct slot
assignment, without the validating setters. Every failure of the input raises
:class:`MessageDecodeError` (or its subclass :class:`CodecLimitError`), a
``MessageFormatException``; no msgspec or Python exception escapes. Two leniencies: an
integer where a float or double is expected is read as the equal float (msgspec's rule),
and property and map names are not re-checked as selector identifiers.

This module holds functions and the per-limits :class:`_Decoding` only, so that mypyc can
compile it; the classes mypyc cannot take (the errors, which subclass the interpreted JMS
exception tree; :class:`CodecLimits`; the msgspec ``Struct`` types of a Map or Stream value,
whose class options a compiled ``Struct`` would lose) live in ``_codec_types.py`` and are
re-exported here. It is not in ``setup.py``'s ``COMPILED`` list: compiled, it measured slower
(docs/performance.md, "The codec and the frames compiled").

Pure module: no I/O, threads, clocks or logging.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable
from typing import Annotated, Any, Final, Literal, TypeAlias, TypedDict, cast

import msgspec
from msgspec import Meta

from ternmq.destination import (
    Destination,
    Queue,
    TemporaryQueue,
    TemporaryTopic,
    Topic,
    destination,
)
from ternmq.errors import InvalidDestinationException
from ternmq.message import (
    BytesMessage,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)
from ternmq.message._codec_types import (
    DEFAULT_LIMITS,
    BodyValue,
    CodecLimitError,
    CodecLimits,
    Long,
    MessageCodecError,
    MessageDecodeError,
    VFloat,
)
from ternmq.message._pickle import DEFAULT_BUDGET as _OBJECT_BUDGET
from ternmq.message._types import T

__all__ = [
    "DEFAULT_LIMITS",
    "FORMAT_VERSION",
    "MAGIC",
    "CodecLimitError",
    "CodecLimits",
    "MessageCodecError",
    "MessageDecodeError",
    "KIND_BYTES",
    "KIND_TEXT",
    "body_offset",
    "decode_message",
    "decode_message_view",
    "encode_fields",
    "encode_message",
]

#: The format version this module writes and reads.
FORMAT_VERSION: Final = 1
#: The first four octets of every version-1 encoding (the fifth and sixth are ``"1"`` and
#: the body kind): a MessagePack fixarray of 15 and a 4-character str starting ``"TQ"``.
MAGIC: Final = b"\x9f\xa4TQ"

# Body kinds: index = kind, letter = last character of the leading str.
_KIND_MESSAGE: Final = 0
_KIND_TEXT: Final = 1
_KIND_BYTES: Final = 2
_KIND_MAP: Final = 3
_KIND_STREAM: Final = 4
_KIND_OBJECT: Final = 5
_KIND_LETTERS: Final = "ntbmso"
#: The body kinds of :func:`encode_fields` for a Text (body: str or None) and a Bytes
#: message (body: bytes, bytearray or memoryview).
KIND_TEXT: Final = _KIND_TEXT
KIND_BYTES: Final = _KIND_BYTES
_KIND_NAMES: Final = (
    "Message",
    "TextMessage",
    "BytesMessage",
    "MapMessage",
    "StreamMessage",
    "ObjectMessage",
)
_LEADS: Final = tuple(f"TQ{FORMAT_VERSION}{letter}" for letter in _KIND_LETTERS)
_HEAD_LEN: Final = 6  # fixarray header, str header, "TQ", version, kind
_EMPTY_MAP: Final = b"\x80"  # MessagePack's empty map (fixmap of 0 entries)
_EMPTY_RAW: Final = msgspec.Raw(_EMPTY_MAP)

# The elements of the array, for error messages.
_FIELDS: Final = (
    "format tag",
    "message_id",
    "timestamp",
    "correlation_id",
    "reply_to",
    "destination",
    "delivery_mode",
    "redelivered",
    "type",
    "expiration",
    "delivery_time",
    "priority",
    "properties",
    "property types",
    "body",
)
_I_BODY: Final = 14

# --------------------------------------------------------------------------- encoding

_ENCODER: Final = msgspec.msgpack.Encoder()
_DEST_TYPES: Final = frozenset({Queue, Topic, TemporaryQueue, TemporaryTopic})


def _body_limit(kind: int, size: int, limits: CodecLimits) -> CodecLimitError:
    unit = "characters" if kind == _KIND_TEXT else "octets"
    return CodecLimitError(
        "max_body_size", size, limits.max_body_size, f"{_KIND_NAMES[kind]} body {unit}"
    )


def _other_body(msg: Message, limits: CodecLimits) -> tuple[int, object]:
    """Kind and body of anything but a TextMessage (subclasses of the six included)."""
    if isinstance(msg, TextMessage):
        text = msg._text
        if text is not None and len(text) > limits.max_body_size:
            raise _body_limit(_KIND_TEXT, len(text), limits)
        return _KIND_TEXT, text
    if isinstance(msg, BytesMessage):
        if len(msg._buffer) > limits.max_body_size:
            raise _body_limit(_KIND_BYTES, len(msg._buffer), limits)
        return _KIND_BYTES, msg._buffer
    if isinstance(msg, MapMessage):
        entries = msg._map
        if len(entries) > limits.max_map_entries:
            raise CodecLimitError(
                "max_map_entries", len(entries), limits.max_map_entries, "MapMessage entries"
            )
        return _KIND_MAP, entries
    if isinstance(msg, StreamMessage):
        items = msg._items
        if len(items) > limits.max_stream_items:
            raise CodecLimitError(
                "max_stream_items", len(items), limits.max_stream_items, "StreamMessage fields"
            )
        return _KIND_STREAM, items
    if isinstance(msg, ObjectMessage):
        payload = msg._payload
        if payload is not None and len(payload) > limits.max_body_size:
            raise _body_limit(_KIND_OBJECT, len(payload), limits)
        return _KIND_OBJECT, payload
    if isinstance(msg, Message):
        return _KIND_MESSAGE, None
    raise MessageCodecError(f"only ternmq messages can be encoded, not {type(msg).__name__}")


def _destination_text(dest: object, field: str) -> str:
    if not isinstance(dest, Destination):
        raise MessageCodecError(
            f"cannot encode {field} {dest!r:.80}: only ternmq destinations (Queue, Topic, "
            "TemporaryQueue, TemporaryTopic) can be carried"
        )
    return str(dest)


def _check_names(names: Iterable[str], limits: CodecLimits, what: str) -> None:
    longest = max(map(len, names), default=0)
    if longest > limits.max_name_length:
        raise CodecLimitError("max_name_length", longest, limits.max_name_length, what)


def encode_message(msg: Message, *, limits: CodecLimits = DEFAULT_LIMITS) -> bytes:
    """Encode a message (headers, typed properties, body) in the format of this module.

    The message is not changed; its read/write modes and read positions are not encoded.
    An ObjectMessage's pickled octets are carried as they are. Values are taken as the
    model's setters stored them and are not validated again (the decoder does that).

    Args:
        msg: a ternmq message (any of the six classes).
        limits: the bounds to respect; give the decoder the same.

    Raises:
        CodecLimitError: the message exceeds one of ``limits`` (the error names it).
        MessageCodecError: ``msg`` is not a ternmq message or holds a value that cannot be
            encoded (e.g. a foreign destination object or an unpaired surrogate in a string).
    """
    body: object
    if type(msg) is TextMessage:
        kind = _KIND_TEXT
        body = text = msg._text
        if text is not None and len(text) > limits.max_body_size:
            raise _body_limit(kind, len(text), limits)
    else:
        kind, body = _other_body(msg, limits)
    props = msg._properties
    types = msg._property_types
    if len(props) > limits.max_properties:
        raise CodecLimitError(
            "max_properties", len(props), limits.max_properties, "number of properties"
        )
    if len(types) != len(props):
        raise MessageCodecError(
            f"cannot encode {type(msg).__name__}: {len(props)} properties but "
            f"{len(types)} property types"
        )
    cid = msg._correlation_id
    reply_to = msg._reply_to
    dest = msg._destination
    return encode_fields(
        kind,
        msg._message_id,
        msg._timestamp,
        (cid,) if isinstance(cid, bytes) else cid,
        None
        if reply_to is None
        else str(reply_to)
        if type(reply_to) in _DEST_TYPES
        else _destination_text(reply_to, "reply_to"),
        None
        if dest is None
        else str(dest)
        if type(dest) in _DEST_TYPES
        else _destination_text(dest, "destination"),
        msg._delivery_mode,
        msg._redelivered,
        msg._type,
        msg._expiration,
        msg._delivery_time,
        msg._priority,
        props,
        types,
        body,
        limits,
        type(msg).__name__,
    )


def encode_fields(
    kind: int,
    message_id: str | None,
    timestamp: int,
    correlation_id: str | tuple[bytes] | None,
    reply_to: str | None,
    destination: str | None,
    delivery_mode: int,
    redelivered: bool,
    jms_type: str | None,
    expiration: int,
    delivery_time: int,
    priority: int,
    props: dict[str, Any],
    types: dict[str, T],
    body: object,
    limits: CodecLimits = DEFAULT_LIMITS,
    what: str = "message",
) -> bytes:
    """The encoding of a message given as its fields, in the order of the format, without
    a message object: what :func:`encode_message` writes, for a gateway that has the
    fields already (a STOMP SEND) and would otherwise build a message only to encode it.

    The caller vouches for the values as the model's setters would (destinations as their
    ``str()`` form, a bytes correlation id as a 1-tuple, ``kind`` one of the body kinds
    with its body, ``props`` and ``types`` with the same names); the size limits are
    checked here as :func:`encode_message` checks them, except ``max_body_size`` and
    ``max_properties``, which the caller checks while it builds the body and properties.

    Raises:
        CodecLimitError: past ``max_name_length`` or ``max_encoded_size``.
        MessageCodecError: a value msgspec cannot encode (``what`` names the message).
    """
    try:
        data = _ENCODER.encode(
            (
                _LEADS[kind],
                message_id,
                timestamp,
                correlation_id,
                reply_to,
                destination,
                delivery_mode,
                redelivered,
                jms_type,
                expiration,
                delivery_time,
                priority,
                props,
                types,
                body,
            )
        )
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as exc:
        # UnicodeEncodeError (an unpaired surrogate) is a ValueError.
        raise MessageCodecError(f"cannot encode {what}: {exc}", linked_exception=exc) from None
    size = len(data)
    if size > limits.max_name_length:
        # A name of n characters takes at least n octets: smaller encodings need no check.
        _check_names(props, limits, "length of a property name")
        if kind == _KIND_MAP:
            _check_names(body, limits, "length of a MapMessage entry name")  # type: ignore[arg-type]
    if size > limits.max_encoded_size:
        raise CodecLimitError(
            "max_encoded_size", size, limits.max_encoded_size, "encoded message octets"
        )
    return data


# --------------------------------------------------------------------------- decoding

# The decoders' types are built at run time from the limits; through these aliases mypy
# sees values, not type expressions.
_annotated: Any = Annotated
_tuple: Any = tuple
_dict: Any = dict
_list: Any = list
_literal: Any = Literal
_typed_dict: Any = TypedDict


def _body_type(kind: int, limits: CodecLimits) -> object:
    if kind == _KIND_MESSAGE:
        return None
    if kind == _KIND_TEXT:
        return _annotated[str, Meta(max_length=limits.max_body_size)] | None
    if kind == _KIND_BYTES:
        return _annotated[bytearray, Meta(max_length=limits.max_body_size)]
    if kind == _KIND_MAP:
        name = _annotated[str, Meta(max_length=limits.max_name_length)]
        return _annotated[_dict[name, BodyValue], Meta(max_length=limits.max_map_entries)]
    if kind == _KIND_STREAM:
        return _annotated[_list[BodyValue], Meta(max_length=limits.max_stream_items)]
    return _annotated[bytes, Meta(max_length=limits.max_body_size)] | None


def _wire_type(lead: str, body: object) -> object:
    """The type of the encoded array whose leading str is ``lead``, its body of type
    ``body`` (the two property maps left raw)."""
    return _tuple[
        _literal[lead],
        str | None,  # message_id
        Long,  # timestamp
        str | tuple[bytes] | None,  # correlation_id
        str | None,  # reply_to
        str | None,  # destination
        Literal[1, 2],  # delivery_mode
        bool,  # redelivered
        str | None,  # type
        Long,  # expiration
        Long,  # delivery_time
        _annotated[int, Meta(ge=0, le=9)],  # priority
        msgspec.Raw,  # properties
        msgspec.Raw,  # property types
        body,
    ]


_PropertyValue: TypeAlias = bool | Long | float | str | None
# What msgspec checks for a property value of each type in a specialised decoder (below).
_PROP_VALUE_TYPE: Final[dict[T, object]] = {
    T.NULL: None,
    T.BOOLEAN: bool,
    T.BYTE: Annotated[int, Meta(ge=-(2**7), le=2**7 - 1)],
    T.SHORT: Annotated[int, Meta(ge=-(2**15), le=2**15 - 1)],
    T.INT: Annotated[int, Meta(ge=-(2**31), le=2**31 - 1)],
    T.LONG: Long,
    T.FLOAT: float,  # and a binary32 check after decoding
    T.DOUBLE: float,
    T.STRING: str,
}
# The Python type of a property value of each type; properties have no char or byte[].
_PROP_PYTYPE: Final[dict[T, type]] = {
    T.NULL: type(None),
    T.BOOLEAN: bool,
    T.BYTE: int,
    T.SHORT: int,
    T.INT: int,
    T.LONG: int,
    T.FLOAT: float,
    T.DOUBLE: float,
    T.STRING: str,
}
_NARROW_RANGE: Final[dict[T, tuple[int, int]]] = {
    T.BYTE: (-(2**7), 2**7 - 1),
    T.SHORT: (-(2**15), 2**15 - 1),
    T.INT: (-(2**31), 2**31 - 1),
}
_T_FLOAT: Final = T.FLOAT

# A specialised property decoder: (decoder of the properties map as a TypedDict with one key
# per name, the name -> type dict to copy, the map's MessagePack header, FLOAT names).
_Plan: TypeAlias = "tuple[msgspec.msgpack.Decoder[Any], dict[str, T], bytes, tuple[str, ...]]"
_PLANS_SIZE: Final = 1024  # specialised decoders kept per CodecLimits
_PLAN_KEY_MAX: Final = 4096  # octets of a property-types map worth specialising
_SEEN_SIZE: Final = 4096


def _map_header(n: int) -> bytes:
    if n < 16:
        return bytes((0x80 | n,))
    if n < 1 << 16:
        return b"\xde" + n.to_bytes(2, "big")
    return b"\xdf" + n.to_bytes(4, "big")


class _Decoding:
    """Everything decoding needs under one CodecLimits.

    The array is decoded by a typed decoder per body kind, with the two property maps left
    as raw MessagePack. The property-types map (names and type tags) then selects how to
    decode the properties: the first time a given map is seen, generically and checked in
    Python; from the second time on, by a decoder specialised to those names and types
    (a TypedDict), which checks every value's type and range in C and yields the dict
    directly. Workloads reuse a handful of property sets, so the cache stays small; it is
    bounded anyway.
    """

    __slots__ = ("heads", "limits", "plans", "props_decoder", "seen", "types_decoder", "view_heads")

    def __init__(self, limits: CodecLimits) -> None:
        self.limits = limits
        name = _annotated[str, Meta(max_length=limits.max_name_length)]
        count = Meta(max_length=limits.max_properties)
        self.props_decoder: msgspec.msgpack.Decoder[dict[str, Any]] = msgspec.msgpack.Decoder(
            _annotated[_dict[name, _PropertyValue], count]
        )
        self.types_decoder: msgspec.msgpack.Decoder[dict[str, T]] = msgspec.msgpack.Decoder(
            _annotated[_dict[name, T], count]
        )
        self.heads: dict[bytes, tuple[int, msgspec.msgpack.Decoder[Any]]] = {}
        for kind, lead in enumerate(_LEADS):
            wire = _wire_type(lead, _body_type(kind, limits))
            self.heads[MAGIC + lead[2:].encode()] = (kind, msgspec.msgpack.Decoder(wire))
        # The same, but a Bytes body decoded as a view of the input (decode_message_view).
        self.view_heads = dict(self.heads)
        body = _annotated[memoryview, Meta(max_length=limits.max_body_size)]
        wire = _wire_type(_LEADS[_KIND_BYTES], body)
        self.view_heads[MAGIC + _LEADS[_KIND_BYTES][2:].encode()] = (
            _KIND_BYTES,
            msgspec.msgpack.Decoder(wire),
        )
        # None: the specialised decoder failed its check; stay generic for that key.
        self.plans: dict[bytes, _Plan | None] = {}
        self.seen: set[int] = set()
        self._specialise(b"\x80", {}, None, {})

    def _specialise(
        self, key: bytes, types: dict[str, T], raw: msgspec.Raw | None, expected: dict[str, Any]
    ) -> None:
        """Make (and check) the specialised decoder for the property-types map ``key``."""
        # msgspec 0.22 matches TypedDict keys against the UTF-8 form that CPython caches on
        # a str, which a non-ASCII name built at run time lacks until something asks for
        # it; encoding the names once fills that cache.
        _ENCODER.encode(list(types))
        fields = {name: _PROP_VALUE_TYPE[tag] for name, tag in types.items()}
        decoder: msgspec.msgpack.Decoder[dict[str, Any]]
        decoder = msgspec.msgpack.Decoder(_typed_dict("_Properties", fields))
        plan: _Plan | None = (
            decoder,
            types,
            _map_header(len(types)),
            tuple(name for name, tag in types.items() if tag is T.FLOAT),
        )
        if raw is not None:
            # Use it only if it decodes what the generic path just accepted identically.
            try:
                ok = _ENCODER.encode(decoder.decode(raw)) == _ENCODER.encode(expected)
            except (msgspec.DecodeError, UnicodeDecodeError):
                ok = False
            if not ok:
                plan = None
        if len(self.plans) >= _PLANS_SIZE:
            self.plans.clear()
        self.plans[key] = plan

    def properties(
        self, kind: int, key: bytes, raw: msgspec.Raw
    ) -> tuple[dict[str, Any], dict[str, T]]:
        """Decode and check the properties the generic way (no specialised decoder yet)."""
        try:
            types = self.types_decoder.decode(key)
            props = self.props_decoder.decode(raw)
        except msgspec.ValidationError as exc:
            raise _translate_properties(exc, kind, self.limits) from None
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # invalid UTF-8: the latter
            raise _bad(kind, f"properties: {exc}") from None
        _check_properties(kind, props, types)
        if len(key) <= _PLAN_KEY_MAX and key not in self.plans:
            seen = hash(key)
            if seen in self.seen:
                self._specialise(key, dict(types), raw, props)
            else:
                if len(self.seen) >= _SEEN_SIZE:
                    self.seen.clear()
                self.seen.add(seen)
        return props, types


_DEFAULT_DECODING: Final = _Decoding(DEFAULT_LIMITS)
_DECODINGS: dict[CodecLimits, _Decoding] = {DEFAULT_LIMITS: _DEFAULT_DECODING}
_DECODINGS_SIZE: Final = 16


def _decoding_for(limits: CodecLimits) -> _Decoding:
    decoding = _DECODINGS.get(limits)
    if decoding is None:
        if not isinstance(limits, CodecLimits):
            raise TypeError(f"limits must be a CodecLimits, not {type(limits).__name__}")
        decoding = _Decoding(limits)
        if len(_DECODINGS) >= _DECODINGS_SIZE:
            _DECODINGS.clear()
            _DECODINGS[DEFAULT_LIMITS] = _DEFAULT_DECODING
        _DECODINGS[limits] = decoding
    return decoding


# Destinations are immutable values, so decoded messages may share them: a bounded cache of
# successfully parsed texts, emptied when full.
_DEST_CACHE: dict[str, Destination] = {}
_DEST_CACHE_SIZE: Final = 1024


def _parse_destination(text: str, field: str) -> Destination:
    try:
        dest = destination(text)
    except InvalidDestinationException as exc:
        raise MessageDecodeError(
            f"malformed message encoding: {field} {text!r:.80} is not a valid destination ({exc})",
            linked_exception=exc,
        ) from None
    if len(_DEST_CACHE) >= _DEST_CACHE_SIZE:
        _DEST_CACHE.clear()
    _DEST_CACHE[text] = dest
    return dest


def _bad(kind: int, what: str) -> MessageDecodeError:
    return MessageDecodeError(f"malformed {_KIND_NAMES[kind]} encoding: {what}")


_F32: Final = struct.Struct("<f")
_F64: Final = struct.Struct("<d")


def _is_binary32(value: float) -> bool:
    """True when ``value`` is exactly a binary32 value widened (NaN payloads included)."""
    try:
        narrowed = _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return False
    return bool(_F64.pack(narrowed) == _F64.pack(value))


def _check_properties(kind: int, props: dict[str, Any], types: dict[str, T]) -> None:
    """Check that properties and types have the same names and agree (generic path).

    As msgspec does for the specialised path, an int given for a float or double property
    is converted to float.
    """
    if props.keys() != types.keys():
        odd = sorted(props.keys() ^ types.keys())[0]
        where = "no type" if odd in props else "no value"
        raise _bad(kind, f"property {odd!r:.80} has {where}")
    for name, tag in types.items():
        value = props[name]
        expected = _PROP_PYTYPE.get(tag)
        if expected is None:
            raise _bad(kind, f"property {name!r:.80} has type {tag.name}, not a property type")
        if type(value) is not expected:
            if expected is float and type(value) is int:
                props[name] = value = float(value)
            else:
                raise _bad(
                    kind,
                    f"property {name!r:.80} has type {tag.name} but holds "
                    f"{type(value).__name__} {value!r:.40}",
                )
        bounds = _NARROW_RANGE.get(tag)
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            raise _bad(kind, f"property {name!r:.80} holds {value}, outside the {tag.name} range")
        if tag is _T_FLOAT and not _is_binary32(value):
            raise _bad(kind, f"property {name!r:.80} holds {value!r}, not a binary32 FLOAT")


def _check_float_properties(kind: int, props: dict[str, Any], names: tuple[str, ...]) -> None:
    for name in names:
        if not _is_binary32(props[name]):
            raise _bad(kind, f"property {name!r:.80} holds {props[name]!r}, not a binary32 FLOAT")


def _check_body_floats(kind: int, fields: Iterable[tuple[T, Any]]) -> None:
    for tag, value in fields:
        if tag is _T_FLOAT and not _is_binary32(value):
            raise _bad(kind, f"body value {value!r} is not a binary32 FLOAT")


_LENGTH_ERROR: Final = re.compile(r"Expected `\w+` of length <= \d+(?: - at (`key` in )?`(.*)`)?")
_PATH: Final = re.compile(r"`\$\[(\d+)\]")


def _limit_error(
    exc: msgspec.ValidationError, limits: CodecLimits, limit: str, what: str
) -> CodecLimitError:
    err = CodecLimitError(limit, None, getattr(limits, limit), what)
    err.set_linked_exception(exc)
    return err


def _translate(exc: msgspec.ValidationError, kind: int, limits: CodecLimits) -> MessageDecodeError:
    """msgspec's validation error of the array as a limit error or a decode error."""
    text = str(exc)
    m = _LENGTH_ERROR.fullmatch(text)
    if m is not None and m.group(2) == f"$[{_I_BODY}]":
        if m.group(1) is not None:
            return _limit_error(exc, limits, "max_name_length", "length of a MapMessage name")
        if kind == _KIND_MAP:
            return _limit_error(exc, limits, "max_map_entries", "MapMessage entries")
        if kind == _KIND_STREAM:
            return _limit_error(exc, limits, "max_stream_items", "StreamMessage fields")
        unit = "characters" if kind == _KIND_TEXT else "octets"
        return _limit_error(exc, limits, "max_body_size", f"{_KIND_NAMES[kind]} body {unit}")
    p = _PATH.search(text)
    field = f" in {_FIELDS[int(p.group(1))]}" if p is not None and int(p.group(1)) < 15 else ""
    return MessageDecodeError(
        f"malformed {_KIND_NAMES[kind]} encoding{field}: {text}", linked_exception=exc
    )


def _translate_properties(
    exc: msgspec.ValidationError, kind: int, limits: CodecLimits
) -> MessageDecodeError:
    """msgspec's validation error of a property map as a limit error or a decode error."""
    text = str(exc)
    m = _LENGTH_ERROR.fullmatch(text)
    if m is not None and m.group(2) in (None, "$"):
        if m.group(1) is not None:
            return _limit_error(exc, limits, "max_name_length", "length of a property name")
        return _limit_error(exc, limits, "max_properties", "number of properties")
    return MessageDecodeError(
        f"malformed {_KIND_NAMES[kind]} encoding in properties: {text}", linked_exception=exc
    )


# A MessagePack array header (fixarray, array 16, array 32) followed by a str of 4 (fixstr).
_ANY_VERSION: Final = re.compile(rb"(?:[\x90-\x9f]|\xdc..|\xdd....)\xa4TQ(.)(.)", re.DOTALL)


def _bad_lead(data: bytes | memoryview) -> MessageDecodeError:
    """Why the leading octets are not those of a known format."""
    head = bytes(data[:16])
    m = _ANY_VERSION.match(head)
    if m is None:
        if len(head) < _HEAD_LEN and any(h.startswith(head) for h in _DEFAULT_DECODING.heads):
            return MessageDecodeError(
                f"truncated message encoding: {len(head)} octets, shorter than the "
                f"{_HEAD_LEN} leading octets"
            )
        return MessageDecodeError(
            f"not a ternmq message encoding: it starts with {head[:6].hex(' ') or 'nothing'}, "
            f"not {MAGIC.hex(' ')} (a MessagePack array whose first element is 'TQ…')"
        )
    version, letter = m.group(1), m.group(2)
    if version != str(FORMAT_VERSION).encode():
        return MessageDecodeError(
            f"unsupported message encoding version {version.decode('latin-1')!r}: this "
            f"ternmq reads version {FORMAT_VERSION} only; upgrade the reader or have the "
            f"writer use version {FORMAT_VERSION}"
        )
    if head[0] != MAGIC[0]:
        return MessageDecodeError(
            f"malformed message encoding: a version-{FORMAT_VERSION} message is an array of "
            "15 elements"
        )
    return MessageDecodeError(
        f"unknown body kind {letter.decode('latin-1')!r} in the message encoding "
        f"(known: {', '.join(_KIND_LETTERS)})"
    )


def _as_octets(data: object) -> memoryview:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise MessageDecodeError(
            f"a message encoding is bytes, bytearray or memoryview, not {type(data).__name__}"
        )
    try:
        return memoryview(data).cast("B")
    except (TypeError, ValueError) as exc:
        raise MessageDecodeError(
            f"a message encoding must be a contiguous buffer of octets ({exc})"
        ) from None


def _properties(
    decoding: _Decoding, kind: int, key: bytes, props_raw: msgspec.Raw
) -> tuple[dict[str, Any], dict[str, T]]:
    """The properties and their types: by the specialised decoder of the property-types map
    ``key`` once there is one, else the generic way.

    Raises:
        MessageDecodeError: malformed properties (CodecLimitError past a limit).
    """
    plan = decoding.plans.get(key)
    if plan is None:
        return decoding.properties(kind, key, props_raw)
    # One copy of the (small) map and a prefix test cost less than a memoryview, its slice
    # and their comparison.
    octets = bytes(props_raw)
    if not octets.startswith(plan[2]):
        return decoding.properties(kind, key, props_raw)
    try:
        props = plan[0].decode(octets)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
        # Rejected by the fast path: let the generic path say why, so the error text
        # does not depend on which path ran (only the error case pays twice).
        decoding.properties(kind, key, props_raw)
        raise _bad(kind, "properties: rejected by the property decoder") from None
    if plan[3]:
        _check_float_properties(kind, props, plan[3])
    return props, plan[1].copy()


def decode_message(
    data: bytes | bytearray | memoryview, *, limits: CodecLimits = DEFAULT_LIMITS
) -> Message:
    """Decode what :func:`encode_message` produced into a new message of the same class.

    The result is in the received state (as ``Message._freeze()`` leaves it): properties and
    body read-only, a Bytes/Stream body in read mode at its start, no acknowledgement hook,
    and for an ObjectMessage no trusted modules (the client sets those).

    Args:
        data: the encoded octets (``bytes``, ``bytearray`` or a ``memoryview`` of octets).
        limits: the bounds to enforce (see :class:`CodecLimits`).

    Raises:
        CodecLimitError: the input exceeds one of ``limits`` (the error names it).
        MessageDecodeError: the input is truncated, not a ternmq message, of an unknown
            format version, or malformed (wrong types, bad tags, values outside their Java
            range, invalid destination strings).
        TypeError: ``limits`` is not a :class:`CodecLimits`.
    """
    decoding = _DEFAULT_DECODING if limits is DEFAULT_LIMITS else _decoding_for(limits)
    return _decode(data, limits, decoding, decoding.heads)


# An encoding's array with every element left raw (views of the input, nothing decoded):
# where the body starts, for body_offset.
_RAW_ELEMENTS: Final = msgspec.msgpack.Decoder(list[msgspec.Raw])


def body_offset(data: bytes) -> int:
    """Where the body's encoding starts in ``data`` (an encoded message): every header and
    property is in ``data[:body_offset(data)]``. For a reader that looks for a property's
    name in a large message without scanning its body. Nothing is decoded or copied (the
    elements are read as raw views); an encoding that is not a MessagePack array gives
    ``len(data)`` (look everywhere)."""
    try:
        elements = _RAW_ELEMENTS.decode(data)
    except msgspec.DecodeError:
        return len(data)
    return len(data) - len(elements[-1]) if elements else len(data)


def decode_message_view(
    data: bytes, *, limits: CodecLimits = DEFAULT_LIMITS
) -> tuple[Message, memoryview | None]:
    """:func:`decode_message` without copying a Bytes body: for a reader that only passes
    the body's octets on (a gateway writing them to a socket).

    Returns:
        The message and, for a BytesMessage, a read-only view of its body's octets in
        ``data`` (the view keeps ``data`` alive), the message's own body left empty; for
        any other kind the message as :func:`decode_message` gives it, and None.

    Raises:
        As :func:`decode_message`.
    """
    decoding = _DEFAULT_DECODING if limits is DEFAULT_LIMITS else _decoding_for(limits)
    msg = _decode(data, limits, decoding, decoding.view_heads)
    if type(msg) is not BytesMessage:
        return msg, None
    # The view decoder's body: a memoryview where the model declares a bytearray (read
    # through Any, so that the compiled module does not check it against the declaration).
    view: memoryview = cast(Any, msg)._buffer
    msg._buffer = bytearray()
    return msg, view


def _decode(
    data: bytes | bytearray | memoryview,
    limits: CodecLimits,
    decoding: _Decoding,
    heads: dict[bytes, tuple[int, msgspec.msgpack.Decoder[Any]]],
) -> Message:
    """:func:`decode_message` with the decoders of ``heads`` (``decoding.heads``, or
    ``decoding.view_heads`` for :func:`decode_message_view`)."""
    if type(data) is bytes:
        entry = heads.get(data[:_HEAD_LEN])
    else:
        data = _as_octets(data)
        entry = heads.get(data[:_HEAD_LEN].tobytes())
    if len(data) > limits.max_encoded_size:
        raise CodecLimitError(
            "max_encoded_size", len(data), limits.max_encoded_size, "encoded message octets"
        )
    if entry is None:
        raise _bad_lead(data)
    kind, decoder = entry
    try:
        (_, mid, ts, cid, reply_to, dest, mode, redelivered, jms_type, expiration,
         delivery_time, priority, props_raw, types_raw, body) = decoder.decode(data)  # fmt: skip
    except msgspec.ValidationError as exc:
        raise _translate(exc, kind, limits) from None
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # invalid UTF-8: the latter
        raise MessageDecodeError(
            f"malformed {_KIND_NAMES[kind]} encoding: {exc}", linked_exception=exc
        ) from None
    if type(cid) is tuple:
        cid = cid[0]
    # No properties (most messages): two empty maps, compared as Raw (no copies).
    if types_raw == _EMPTY_RAW and props_raw == _EMPTY_RAW:
        props: dict[str, Any] = {}
        types: dict[str, T] = {}
    else:
        props, types = _properties(decoding, kind, bytes(types_raw), props_raw)
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
        if VFloat in map(type, body.values()):
            _check_body_floats(kind, entries.values())
        msg = MapMessage.__new__(MapMessage)
        msg._map = entries
    elif kind == _KIND_STREAM:
        items = [(v.t, v.v) for v in body]
        if VFloat in map(type, body):
            _check_body_floats(kind, items)
        msg = StreamMessage.__new__(StreamMessage)
        msg._items = items
        msg._pos = 0
        msg._partial = None
    else:
        msg = ObjectMessage.__new__(ObjectMessage)
        msg._payload = body
        msg._trusted_modules = None
        msg._pickle_budget = _OBJECT_BUDGET
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
    msg._property_types = types
    msg._read_only_properties = True
    msg._read_only_body = True
    msg._ack_hook = None
    return msg
