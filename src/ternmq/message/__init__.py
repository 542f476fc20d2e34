"""The JMS message model: the six message types, typed properties and conversions.

Pure Python: no I/O, threads or clocks. Public names (re-exported by ``ternmq``):
:class:`Message`, :class:`TextMessage`, :class:`BytesMessage`, :class:`MapMessage`,
:class:`StreamMessage`, :class:`ObjectMessage` and :class:`DeliveryMode`.

Internal contract shared with the codec, the selector engine and the client: every message
has the slots ``_message_id``, ``_timestamp``, ``_correlation_id``, ``_reply_to``,
``_destination``, ``_delivery_mode``, ``_redelivered``, ``_type``, ``_expiration``,
``_delivery_time``, ``_priority``, ``_properties`` (name -> value, None for a null value),
``_property_types`` (name -> :class:`~ternmq.message._types.T`), ``_read_only_properties``,
``_read_only_body`` and ``_ack_hook``; the bodies are ``TextMessage._text``,
``BytesMessage._buffer``, ``MapMessage._map``, ``StreamMessage._items`` and
``ObjectMessage._payload`` (plus ``_trusted_modules``). ``_freeze()`` gives the received
state and ``_copy()`` an independent copy.
"""

from __future__ import annotations

from ternmq.message._bytes import BytesMessage
from ternmq.message._map import MapMessage
from ternmq.message._message import DeliveryMode, Message
from ternmq.message._object import ObjectMessage
from ternmq.message._pickle import DEFAULT_BUDGET, PickleBudget
from ternmq.message._stream import StreamMessage
from ternmq.message._text import TextMessage

__all__ = [
    "DEFAULT_BUDGET",
    "BytesMessage",
    "DeliveryMode",
    "MapMessage",
    "Message",
    "ObjectMessage",
    "PickleBudget",
    "StreamMessage",
    "TextMessage",
]
