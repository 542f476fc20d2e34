"""The base :class:`Message`: header fields, typed properties, modes (JMS 2.0 §3.4, §3.5, §3.10).

Theory of operation
-------------------
A message is a plain slotted object whose private attributes are a contract shared with the
codec, the selector engine and the client (see the module docstring of
``ternmq.message``):

* the eleven header fields live in ``_message_id`` … ``_priority`` and are always writable
  (HDR-25); the send overwrites the provider-assigned ones (HDR-20);
* properties live in ``_properties`` (name -> Python value, exactly what selectors see) and
  ``_property_types`` (name -> :class:`T`). A property set to null is stored as ``None`` with
  tag ``T.NULL`` (PROP-15);
* ``_read_only_properties`` and ``_read_only_body`` are the two modes. A new message is
  writable; ``_freeze()`` gives the *received* state (both read-only, Bytes/Stream bodies
  rewound); ``clear_properties()`` / ``clear_body()`` make each part writable again
  (PROP-07, BODY-04, BODY-05). For Bytes and Stream bodies ``_read_only_body`` also means
  *read mode*: while it is False the body is write-only (BODY-06).

Getters convert through :mod:`ternmq.message._convert` (table 3.1, PROP-08); values handed out
are immutable Python objects, so callers cannot alter the message through them (PROP-19).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import ClassVar, TypeVar

from ternmq.destination import Destination
from ternmq.errors import MessageFormatException, MessageNotWriteableException
from ternmq.message import _convert as cv
from ternmq.message._names import JMSX_TYPES, check_property_name
from ternmq.message._types import T

__all__ = ["DeliveryMode", "Message", "PropertyValue"]

#: What ``_properties`` holds: the Python form of a property value, None for null.
PropertyValue = bool | int | float | str | None

_B = TypeVar("_B")

_LONG_MIN, _LONG_MAX = cv.INTEGRAL_RANGES[T.LONG]


class DeliveryMode(enum.IntEnum):
    """JMS delivery modes, with Java's numeric values (HDR-04)."""

    NON_PERSISTENT = 1
    PERSISTENT = 2


def _check_epoch_ms(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{what} is an int of epoch milliseconds, not {type(value).__name__}")
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise ValueError(f"{what} {value} does not fit a Java long")
    return int(value)


def _check_optional_str(value: object, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{what} is a str or None, not {type(value).__name__}")
    return cv.check_string(value)


def _check_destination(value: object, what: str) -> Destination | None:
    if value is not None and not isinstance(value, Destination):
        raise TypeError(f"{what} is a Queue, Topic or None, not {type(value).__name__}")
    return value


class Message:
    """A JMS message with headers and properties and no body (JMS ``Message``, BODY-01).

    Also the base class of the five body types. A new message is writable and holds the
    defaults of HDR-01: no ID, timestamp 0, PERSISTENT, priority 4, no expiration.
    """

    __slots__ = (
        "_ack_hook",
        "_correlation_id",
        "_delivery_mode",
        "_delivery_time",
        "_destination",
        "_expiration",
        "_message_id",
        "_priority",
        "_properties",
        "_property_types",
        "_read_only_body",
        "_read_only_properties",
        "_redelivered",
        "_reply_to",
        "_timestamp",
        "_type",
    )

    #: Short name of the body type: "message", "text", "bytes", "map", "stream", "object".
    body_type: ClassVar[str] = "message"
    DEFAULT_DELIVERY_MODE: ClassVar[int] = DeliveryMode.PERSISTENT
    DEFAULT_PRIORITY: ClassVar[int] = 4
    DEFAULT_TIME_TO_LIVE: ClassVar[int] = 0
    DEFAULT_DELIVERY_DELAY: ClassVar[int] = 0

    _message_id: str | None
    _timestamp: int
    _correlation_id: str | bytes | None
    _reply_to: Destination | None
    _destination: Destination | None
    _delivery_mode: int
    _redelivered: bool
    _type: str | None
    _expiration: int
    _delivery_time: int
    _priority: int
    _properties: dict[str, PropertyValue]
    _property_types: dict[str, T]
    _read_only_properties: bool
    _read_only_body: bool
    _ack_hook: Callable[[], None] | None

    def __init__(self) -> None:
        self._message_id = None
        self._timestamp = 0
        self._correlation_id = None
        self._reply_to = None
        self._destination = None
        self._delivery_mode = 2
        self._redelivered = False
        self._type = None
        self._expiration = 0
        self._delivery_time = 0
        self._priority = 4
        self._properties = {}
        self._property_types = {}
        self._read_only_properties = False
        self._read_only_body = False
        self._ack_hook = None

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} id={self._message_id!r} "
            f"destination={self._destination!s} properties={len(self._properties)}>"
        )

    # ------------------------------------------------------------------ header fields

    @property
    def jms_message_id(self) -> str | None:
        """JMSMessageID: the provider-assigned ID (``"ID:…"``), or None (HDR-05, HDR-07).

        Setting raises ``TypeError`` for a non-str (other than None).
        """
        return self._message_id

    @jms_message_id.setter
    def jms_message_id(self, value: str | None) -> None:
        self._message_id = _check_optional_str(value, "jms_message_id")

    @property
    def jms_timestamp(self) -> int:
        """JMSTimestamp: epoch ms at which the message was handed to the provider, 0 = unset.

        Setting raises ``TypeError`` for a non-int and ``ValueError`` outside the long range.
        """
        return self._timestamp

    @jms_timestamp.setter
    def jms_timestamp(self, value: int) -> None:
        self._timestamp = _check_epoch_ms(value, "jms_timestamp")

    @property
    def jms_correlation_id(self) -> str | None:
        """JMSCorrelationID as a string; None when unset or held as bytes (HDR-10, HDR-11).

        Setting replaces any bytes form. Raises ``TypeError`` for a non-str (other than None)
        and ``MessageFormatException`` for a string with an unpaired surrogate.
        """
        cid = self._correlation_id
        return cid if isinstance(cid, str) else None

    @jms_correlation_id.setter
    def jms_correlation_id(self, value: str | None) -> None:
        self._correlation_id = _check_optional_str(value, "jms_correlation_id")

    def get_jms_correlation_id_as_bytes(self) -> bytes | None:
        """JMSCorrelationID as bytes: a copy of the bytes form, the UTF-8 of the string form,
        or None when unset (HDR-11, A-26). Never raises."""
        cid = self._correlation_id
        if cid is None:
            return None
        return cid.encode("utf-8") if isinstance(cid, str) else bytes(cid)

    def set_jms_correlation_id_as_bytes(self, value: bytes | bytearray | memoryview | None) -> None:
        """Set JMSCorrelationID to a copy of ``value`` (None clears it); replaces a string form.

        Raises:
            TypeError: ``value`` is not bytes-like or None.
        """
        self._correlation_id = None if value is None else cv.check_bytes(value)

    @property
    def jms_reply_to(self) -> Destination | None:
        """JMSReplyTo: where replies should go, or None (HDR-12).

        Setting raises ``TypeError`` for anything but a ternmq destination or None.
        """
        return self._reply_to

    @jms_reply_to.setter
    def jms_reply_to(self, value: Destination | None) -> None:
        self._reply_to = _check_destination(value, "jms_reply_to")

    @property
    def jms_destination(self) -> Destination | None:
        """JMSDestination: set by the send to the destination used (HDR-03).

        Setting raises ``TypeError`` for anything but a ternmq destination or None.
        """
        return self._destination

    @jms_destination.setter
    def jms_destination(self, value: Destination | None) -> None:
        self._destination = _check_destination(value, "jms_destination")

    @property
    def jms_delivery_mode(self) -> int:
        """JMSDeliveryMode: 1 (NON_PERSISTENT) or 2 (PERSISTENT), set by the send (HDR-04).

        Setting raises ``TypeError`` for a non-int and ``ValueError`` for another number.
        """
        return self._delivery_mode

    @jms_delivery_mode.setter
    def jms_delivery_mode(self, value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"jms_delivery_mode is an int, not {type(value).__name__}")
        if value not in (1, 2):
            raise ValueError(
                f"jms_delivery_mode must be DeliveryMode.NON_PERSISTENT (1) or "
                f"DeliveryMode.PERSISTENT (2), not {value}"
            )
        self._delivery_mode = int(value)

    @property
    def jms_redelivered(self) -> bool:
        """JMSRedelivered: True when the message may have been delivered before (HDR-13).

        Setting raises ``TypeError`` for a non-bool.
        """
        return self._redelivered

    @jms_redelivered.setter
    def jms_redelivered(self, value: bool) -> None:
        self._redelivered = cv.check_boolean(value)

    @property
    def jms_type(self) -> str | None:
        """JMSType: an application-defined type name, or None (HDR-14).

        Setting raises ``TypeError`` for a non-str (other than None) and
        ``MessageFormatException`` for a string with an unpaired surrogate.
        """
        return self._type

    @jms_type.setter
    def jms_type(self, value: str | None) -> None:
        self._type = _check_optional_str(value, "jms_type")

    @property
    def jms_expiration(self) -> int:
        """JMSExpiration: epoch ms after which the message expires, 0 = never (HDR-15).

        Setting raises ``TypeError`` for a non-int and ``ValueError`` outside the long range.
        """
        return self._expiration

    @jms_expiration.setter
    def jms_expiration(self, value: int) -> None:
        self._expiration = _check_epoch_ms(value, "jms_expiration")

    @property
    def jms_delivery_time(self) -> int:
        """JMSDeliveryTime: epoch ms before which the message is not delivered (HDR-19).

        Setting raises ``TypeError`` for a non-int and ``ValueError`` outside the long range.
        """
        return self._delivery_time

    @jms_delivery_time.setter
    def jms_delivery_time(self, value: int) -> None:
        self._delivery_time = _check_epoch_ms(value, "jms_delivery_time")

    @property
    def jms_priority(self) -> int:
        """JMSPriority: 0 (lowest) … 9 (highest), default 4, set by the send (HDR-17).

        Setting raises ``TypeError`` for a non-int and ``ValueError`` outside 0 … 9.
        """
        return self._priority

    @jms_priority.setter
    def jms_priority(self, value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"jms_priority is an int, not {type(value).__name__}")
        if not 0 <= value <= 9:
            raise ValueError(f"jms_priority must be in 0 … 9, not {value}")
        self._priority = int(value)

    # ------------------------------------------------------------------ properties

    def _check_property_write(self, name: str) -> None:
        """Raise unless a property of this name may be written now (mode first, then name)."""
        if self._read_only_properties:
            raise MessageNotWriteableException(
                "the properties of a received message are read-only; call clear_properties() "
                "first to write new ones"
            )
        check_property_name(name)

    def _store_property(self, name: str, tag: T, stored: PropertyValue) -> None:
        """Store a checked value, enforcing the types of JMS-defined properties (PROP-22)."""
        if stored is None:
            tag = T.NULL
        jmsx = JMSX_TYPES.get(name)
        if jmsx is not None and tag is not jmsx and tag is not T.NULL:
            raise MessageFormatException(
                f"{name} is a JMS-defined property of type {cv.TYPE_NAMES[jmsx]}; "
                f"set it with the {cv.TYPE_NAMES[jmsx]} setter, not as {cv.TYPE_NAMES[tag]}"
            )
        self._properties[name] = stored
        self._property_types[name] = tag

    def _set_property(self, name: str, tag: T, value: object) -> None:
        """The one path of every typed property setter: mode, name, value, store."""
        self._check_property_write(name)
        stored = cv.check_value(tag, value)
        assert not isinstance(stored, bytes)
        self._store_property(name, tag, stored)

    def _lookup(self, name: str) -> tuple[T, PropertyValue]:
        tag = self._property_types.get(name) if isinstance(name, str) else None
        if tag is None:
            return T.NULL, None
        return tag, self._properties[name]

    def set_boolean_property(self, name: str, value: bool) -> None:
        """Set a boolean property.

        Raises:
            MessageNotWriteableException: the properties are read-only (PROP-07).
            ValueError: the name is None, empty or invalid (PROP-04, PROP-05).
            TypeError: ``value`` is not a ``bool`` (PROP-02).
            MessageFormatException: a JMSX property of another type (PROP-22).
        """
        self._set_property(name, T.BOOLEAN, value)

    def set_byte_property(self, name: str, value: int) -> None:
        """Set a byte property (-128 … 127).

        Raises:
            MessageNotWriteableException: the properties are read-only (PROP-07).
            ValueError: an invalid name (PROP-04, PROP-05) or a value out of range (PROP-02).
            TypeError: ``value`` is not an ``int`` or is a ``bool`` (PROP-02).
            MessageFormatException: a JMSX property of another type (PROP-22).
        """
        self._set_property(name, T.BYTE, value)

    def set_short_property(self, name: str, value: int) -> None:
        """Set a short property (-32768 … 32767).

        Raises:
            MessageNotWriteableException: the properties are read-only (PROP-07).
            ValueError: an invalid name (PROP-04, PROP-05) or a value out of range (PROP-02).
            TypeError: ``value`` is not an ``int`` or is a ``bool`` (PROP-02).
            MessageFormatException: a JMSX property of another type (PROP-22).
        """
        self._set_property(name, T.SHORT, value)

    def set_int_property(self, name: str, value: int) -> None:
        """Set an int property (32-bit).

        Raises:
            MessageNotWriteableException: the properties are read-only (PROP-07).
            ValueError: an invalid name (PROP-04, PROP-05) or a value out of range (PROP-02).
            TypeError: ``value`` is not an ``int`` or is a ``bool`` (PROP-02).
            MessageFormatException: a JMSX property of another type (PROP-22).
        """
        self._set_property(name, T.INT, value)

    def set_long_property(self, name: str, value: int) -> None:
        """Set a long property (64-bit).

        Raises:
            MessageNotWriteableException: the properties are read-only (PROP-07).
            ValueError: an invalid name (PROP-04, PROP-05) or a value out of range (PROP-02).
            TypeError: ``value`` is not an ``int`` or is a ``bool`` (PROP-02).
            MessageFormatException: a JMSX property of another type (PROP-22).
        """
        self._set_property(name, T.LONG, value)

    def set_float_property(self, name: str, value: float) -> None:
        """Set a float property: stores the nearest binary32 value (PROP-03).

        Raises:
            MessageNotWriteableException: the properties are read-only (PROP-07).
            ValueError: an invalid name (PROP-04, PROP-05), or a finite value that overflows
                binary32.
            TypeError: ``value`` is not a ``float``/``int`` or is a ``bool`` (PROP-02).
            MessageFormatException: a JMSX property of another type (PROP-22).
        """
        self._set_property(name, T.FLOAT, value)

    def set_double_property(self, name: str, value: float) -> None:
        """Set a double property.

        Raises:
            MessageNotWriteableException: the properties are read-only (PROP-07).
            ValueError: an invalid name (PROP-04, PROP-05).
            TypeError: ``value`` is not a ``float``/``int`` or is a ``bool`` (PROP-02).
            MessageFormatException: a JMSX property of another type (PROP-22).
        """
        self._set_property(name, T.DOUBLE, value)

    def set_string_property(self, name: str, value: str | None) -> None:
        """Set a String property; None sets a null value that exists (PROP-15).

        Raises:
            MessageNotWriteableException: the properties are read-only (PROP-07).
            ValueError: an invalid name (PROP-04, PROP-05).
            TypeError: ``value`` is not a ``str`` or None (PROP-02).
            MessageFormatException: an unpaired surrogate (A-33), or a JMSX property of
                another type (PROP-22).
        """
        self._set_property(name, T.STRING, value)

    def set_object_property(self, name: str, value: bool | int | float | str | None) -> None:
        """Set a property from a plain value: ``bool`` -> boolean, ``int`` -> long,
        ``float`` -> double, ``str`` -> String, ``None`` -> null (PROP-13, PROP-15).

        An ``int`` given for a JMS-defined int property (JMSXGroupSeq, JMSXDeliveryCount) is
        stored with that type, since Python ints carry no width.

        Raises:
            MessageNotWriteableException: the properties are read-only (PROP-07).
            ValueError: an invalid name (PROP-04, PROP-05).
            MessageFormatException: any other value type, an ``int`` outside 64 bits, an
                unpaired surrogate, or a JMSX property of another type (PROP-22).
        """
        self._check_property_write(name)
        tag, stored = cv.from_object(value, body=False)
        jmsx = JMSX_TYPES.get(name)
        if tag is T.LONG and (jmsx is T.INT or jmsx is T.LONG):
            lo, hi = cv.INTEGRAL_RANGES[jmsx]
            if not isinstance(stored, int) or not lo <= stored <= hi:
                raise MessageFormatException(
                    f"{name} is a Java {cv.TYPE_NAMES[jmsx]}; {stored!r} is out of its range"
                )
            tag = jmsx
        assert not isinstance(stored, bytes)
        self._store_property(name, tag, stored)

    def get_boolean_property(self, name: str) -> bool:
        """Read a property as boolean (PROP-08, PROP-10); absent or null gives False.

        Raises:
            MessageFormatException: the stored type does not convert to boolean.
        """
        return cv.to_boolean(*self._lookup(name))

    def get_byte_property(self, name: str) -> int:
        """Read a property as byte (PROP-08, PROP-09).

        Raises:
            MessageFormatException: the stored type does not convert to byte.
            ValueError: absent, null, or a String that is not a byte (PROP-12).
        """
        return cv.to_integral(*self._lookup(name), T.BYTE)

    def get_short_property(self, name: str) -> int:
        """Read a property as short (PROP-08, PROP-09).

        Raises:
            MessageFormatException: the stored type does not convert to short.
            ValueError: absent, null, or a String that is not a short (PROP-12).
        """
        return cv.to_integral(*self._lookup(name), T.SHORT)

    def get_int_property(self, name: str) -> int:
        """Read a property as int (PROP-08, PROP-09).

        Raises:
            MessageFormatException: the stored type does not convert to int.
            ValueError: absent, null, or a String that is not an int (PROP-12).
        """
        return cv.to_integral(*self._lookup(name), T.INT)

    def get_long_property(self, name: str) -> int:
        """Read a property as long (PROP-08, PROP-09).

        Raises:
            MessageFormatException: the stored type does not convert to long.
            ValueError: absent, null, or a String that is not a long (PROP-12).
        """
        return cv.to_integral(*self._lookup(name), T.LONG)

    def get_float_property(self, name: str) -> float:
        """Read a property as float (binary32 widened exactly; PROP-03, PROP-08).

        Raises:
            MessageFormatException: the stored type does not convert to float.
            ValueError: a String that is not a Java float (PROP-09).
            TypeError: absent or null (PROP-12).
        """
        return cv.to_float(*self._lookup(name))

    def get_double_property(self, name: str) -> float:
        """Read a property as double (PROP-08).

        Raises:
            MessageFormatException: the stored type does not convert to double.
            ValueError: a String that is not a Java double (PROP-09).
            TypeError: absent or null (PROP-12).
        """
        return cv.to_double(*self._lookup(name))

    def get_string_property(self, name: str) -> str | None:
        """Read a property as String in Java's text forms (PROP-11); absent or null gives None.

        Never raises for a property value (every property type converts to String).
        """
        return cv.to_string(*self._lookup(name))

    def get_object_property(self, name: str) -> bool | int | float | str | None:
        """The stored value without conversion, or None when absent or null (PROP-13).

        Never raises.
        """
        return self._lookup(name)[1]

    def get_property_type(self, name: str) -> str | None:
        """The JMS type of a property: "boolean", "byte", "short", "int", "long", "float",
        "double", "String", or "null" for a null value; None when absent (PROP-14).

        Never raises.
        """
        tag = self._property_types.get(name) if isinstance(name, str) else None
        return None if tag is None else cv.TYPE_NAMES[tag]

    def property_exists(self, name: str) -> bool:
        """True when a property of that name is present, also with a null value (PROP-18).

        Never raises.
        """
        return isinstance(name, str) and name in self._property_types

    def get_property_names(self) -> set[str]:
        """A new set of the names of all properties present, JMSX ones included and header
        fields excluded (PROP-16). Never raises."""
        return set(self._property_types)

    def clear_properties(self) -> None:
        """Remove every property and make the properties writable (PROP-17).

        Headers and body are untouched. Never raises.
        """
        self._properties.clear()
        self._property_types.clear()
        self._read_only_properties = False

    # ------------------------------------------------------------------ body

    def clear_body(self) -> None:
        """Empty the body and make it writable (BODY-04); a plain Message has no body.

        Never raises.
        """
        self._read_only_body = False

    def _has_body(self) -> bool:
        """False when the message has no body in the sense of get_body (A-31)."""
        return False

    def _body_as(self, cls: type[_B]) -> _B:
        """The body as ``cls`` for a message that has one; raises MessageFormatException."""
        raise MessageFormatException(f"a {type(self).__name__} body is never a {cls.__name__}")

    def get_body(self, cls: type[_B]) -> _B | None:
        """The body as an instance of ``cls``, or None when there is no body (BODY-39).

        A plain Message never has a body. The body is returned when its type is ``cls`` or a
        subclass of it (``get_body(object)`` always succeeds, except on StreamMessage).

        Raises:
            MessageFormatException: the body is not assignable to ``cls``, cannot be
                deserialized, or the message is a StreamMessage (BODY-42).
        """
        if not self._has_body():
            return None
        return self._body_as(cls)

    def is_body_assignable_to(self, cls: type[object]) -> bool:
        """True exactly when ``get_body(cls)`` would not raise (BODY-40). Never raises."""
        try:
            self.get_body(cls)
        except MessageFormatException:
            return False
        return True

    # ------------------------------------------------------------------ acknowledgement

    def acknowledge(self) -> None:
        """Acknowledge this message and every one its session consumed before (HDR-29).

        Does nothing on a message that was never received, or in sessions whose
        acknowledgement is automatic.

        Raises:
            IllegalStateException: the session or connection is closed (HDR-30).
            JMSException: the acknowledgement failed.
        """
        hook = self._ack_hook
        if hook is not None:
            hook()

    # ------------------------------------------------------------------ internal contract

    def _freeze(self) -> None:
        """Put the message into the received state: properties and body read-only, a
        Bytes/Stream body in read mode at its start (like ``reset()``)."""
        self._read_only_properties = True
        self._read_only_body = True
        self._rewind()

    def _rewind(self) -> None:
        """Move the read position of a Bytes/Stream body to the start (no-op otherwise)."""

    def _copy(self) -> Message:
        """An independent deep copy of the same class: headers, properties, body and modes.

        The copy has no acknowledgement hook. Each class copies its own fields
        (``_copy_body``), named one by one rather than found through ``__slots__``: a class
        compiled with mypyc has no ``__slots__`` to walk.
        """
        cls = type(self)
        dup = cls.__new__(cls)
        dup._message_id = self._message_id
        dup._timestamp = self._timestamp
        dup._correlation_id = self._correlation_id
        dup._reply_to = self._reply_to
        dup._destination = self._destination
        dup._delivery_mode = self._delivery_mode
        dup._redelivered = self._redelivered
        dup._type = self._type
        dup._expiration = self._expiration
        dup._delivery_time = self._delivery_time
        dup._priority = self._priority
        dup._properties = self._properties.copy()
        dup._property_types = self._property_types.copy()
        dup._read_only_properties = self._read_only_properties
        dup._read_only_body = self._read_only_body
        dup._ack_hook = None
        self._copy_body(dup)
        return dup

    def _copy_body(self, dup: Message) -> None:
        """Copy this class's own body fields into ``dup``, a new instance of the same class
        (a plain Message has none)."""
