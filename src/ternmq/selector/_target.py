"""What a selector reads from a message (catalog SEL-02, SEL-30…SEL-35)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Protocol

__all__ = ["DELIVERY_COUNT", "PropertyValue", "SelectorTarget", "with_delivery_count"]

PropertyValue = bool | int | float | str | None

#: The one receive-time property a selector sees (SEL-34): set by the broker per delivery.
DELIVERY_COUNT: Final = "JMSXDeliveryCount"
_INT: Final = 5  # the JMS type tag of an int (``ternmq.message._types.T.INT``)


class SelectorTarget(Protocol):
    """The message interface a selector evaluates against.

    Both :class:`ternmq.message.Message` and the broker's message record satisfy it. Only
    header fields and properties are read, never the body (SEL-02).

    ``_properties`` maps each property name to its Python value: ``bool``; ``int`` for the
    exact types byte, short, int and long; ``float`` for float (holding the binary32 value)
    and double; ``str``; ``None`` for a property set to null (A-24). Values must be exactly
    those built-in types and in their JMS ranges; anything else gives unspecified (but never
    raising) results.

    Optionally a target also has ``_property_types: Mapping[str, int]``: the JMS type tag
    of each property, numbered as ``ternmq.message._types.T`` (BYTE 2, SHORT 3, INT 5,
    LONG 6, FLOAT 7, DOUBLE 8). Python's ``int`` and ``float`` do not carry a width, and the
    width decides some outcomes: int arithmetic wraps at 32 bits (catalog R-02), float
    arithmetic rounds to binary32 (R-06), and a float compared with an exact number is
    compared in binary32 (V-065, V-069). Without a tag an ``int`` is a long and a ``float``
    a double, as for values given to the object setters (catalog §1.1).
    """

    @property
    def _properties(self) -> Mapping[str, PropertyValue]:
        """Property name -> value."""
        ...

    @property
    def jms_delivery_mode(self) -> int:
        """1 NON_PERSISTENT, 2 PERSISTENT; selectors see the strings (SEL-31)."""
        ...

    @property
    def jms_priority(self) -> int:
        """0…9."""
        ...

    @property
    def jms_message_id(self) -> str | None:
        """The message ID, or None when IDs are disabled."""
        ...

    @property
    def jms_timestamp(self) -> int:
        """Epoch milliseconds; 0 when timestamps are disabled (never NULL in selectors)."""
        ...

    @property
    def jms_correlation_id(self) -> str | bytes | None:
        """A correlation ID held as bytes is NULL in selectors (A-26)."""
        ...

    @property
    def jms_type(self) -> str | None:
        """The message type, or None."""
        ...


class _Counted:
    """A selector target as one delivery of it would carry it: ``JMSXDeliveryCount`` set,
    every other field read through from the target."""

    __slots__ = ("_properties", "_property_types", "_target")

    def __init__(self, target: SelectorTarget, count: int) -> None:
        self._target = target
        props = dict(target._properties)
        props[DELIVERY_COUNT] = count
        self._properties = props
        types = getattr(target, "_property_types", None)
        tags = dict(types) if types else {}
        tags[DELIVERY_COUNT] = _INT
        self._property_types = tags

    def __getattr__(self, name: str) -> object:
        return getattr(self._target, name)


def with_delivery_count(target: SelectorTarget, count: int) -> SelectorTarget:
    """``target`` as the delivery about to be attempted would carry it: with
    ``JMSXDeliveryCount`` = ``count`` (an int; 1 for a first delivery), which a stored message
    does not hold (the broker counts deliveries beside it). For a selector that reads it
    (:attr:`Selector.reads_delivery_count`); the target itself is not changed."""
    return _Counted(target, count)  # type: ignore[return-value]
