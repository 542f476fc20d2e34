"""Sending message objects ternmq did not create (JMS 2.0 §3.12, §4.4.5; BODY-10).

A foreign message is any object offering the public message API (``get_property_names``,
``get_object_property`` and the ``jms_*`` header attributes). It is read through that API
into a ternmq message of the most fitting class; after the send, the provider-assigned
headers are written back through the foreign object's public setters.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ternmq.destination import Destination
from ternmq.errors import JMSException, MessageEOFException
from ternmq.message import (
    BytesMessage,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
)

__all__ = ["adopt", "is_foreign_message", "write_back"]

_ASSIGNED = (
    "jms_message_id",
    "jms_timestamp",
    "jms_destination",
    "jms_delivery_mode",
    "jms_expiration",
    "jms_delivery_time",
    "jms_priority",
)


def is_foreign_message(obj: object) -> bool:
    """True if ``obj`` offers the public message API."""
    return callable(getattr(obj, "get_property_names", None)) and callable(
        getattr(obj, "get_object_property", None)
    )


def _body(obj: Any) -> Message:
    if callable(getattr(obj, "get_map_names", None)):
        m: Message = MapMessage()
        for name in obj.get_map_names():
            m.set_object(name, obj.get_object(name))  # type: ignore[attr-defined]
        return m
    if callable(getattr(obj, "read_object", None)) and callable(getattr(obj, "reset", None)):
        sm = StreamMessage()
        obj.reset()
        while True:
            try:
                sm.write_object(obj.read_object())
            except MessageEOFException:
                break
        return sm
    if callable(getattr(obj, "read_bytes", None)) and hasattr(obj, "body_length"):
        bm = BytesMessage()
        obj.reset()
        bm.write_bytes(obj.read_bytes(obj.body_length) or b"")
        return bm
    if hasattr(obj, "text"):
        return TextMessage(obj.text)
    if hasattr(obj, "object"):
        return ObjectMessage(obj.object)
    return Message()


def adopt(obj: Any) -> Message:
    """A ternmq copy of a foreign message, read through its public API.

    Raises:
        MessageFormatException: a property or body value ternmq cannot carry.
    """
    msg = _body(obj)
    for name in obj.get_property_names():
        msg.set_object_property(name, obj.get_object_property(name))
    for attr in ("jms_correlation_id", "jms_type"):
        value = getattr(obj, attr, None)
        if value is not None:
            setattr(msg, attr, value)
    reply_to = getattr(obj, "jms_reply_to", None)
    if isinstance(reply_to, Destination):  # a foreign destination is not carried (HDR-12)
        msg.jms_reply_to = reply_to
    return msg


def write_back(sent: Message, obj: Any) -> None:
    """Copy the provider-assigned headers of ``sent`` onto the foreign object."""
    for attr in _ASSIGNED:
        with contextlib.suppress(AttributeError, TypeError, ValueError, JMSException):
            setattr(obj, attr, getattr(sent, attr))
