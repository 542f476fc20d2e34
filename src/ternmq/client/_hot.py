"""The client's per-message work, in a module that mypyc compiles (``setup.py``'s COMPILED).

Theory of operation
-------------------
The public classes (``MessageProducer``, ``MessageConsumer``) stay interpreted: applications
and tests patch them, and a compiled class cannot be patched. What each of them does for
every message, once its arguments are checked, is a straight run of attribute reads and
writes on the message and one request built from them; that run lives here, as plain
functions of the values the public method already holds, so that the compiled build runs
it as C and the pure build as the same Python. Nothing here keeps state or blocks.

- :func:`build_send`: a send's headers stamped on the application's message (HDR-03,
  PROD-07), the provider-set ``JMSXUserID`` dropped (PROP-23), the message encoded once
  (PROD-29), and the ``Send`` request made of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from ternmq.destination import Destination
from ternmq.errors import MessageFormatException
from ternmq.message import DeliveryMode, Message
from ternmq.message.codec import encode_message
from ternmq.protocol import commands as c

if TYPE_CHECKING:
    from ternmq.client._send_window import SendWindow

__all__ = ["build_send"]

_PERSISTENT: Final = int(DeliveryMode.PERSISTENT)
_DUP: Final = c.DUPLICATE_ID_PROPERTY


def build_send(
    message: Message,
    dest: Destination,
    mode: int,
    prio: int,
    ttl: float,
    delay: float,
    now: int,
    timestamp: bool,
    message_id: str | None,
    session_id: int,
    window: SendWindow | None,
    next_corr: Callable[[], int],
) -> c.Send:
    """Stamp the headers of a send at ``now`` (epoch ms) on ``message`` and return its
    ``Send`` request. ``window``: the session's, for a pipelined send (which asks it whether
    this one may be quiet: ``corr`` 0), else None; ``next_corr`` numbers an answered one.

    Raises:
        MessageFormatException: the ``JMS_TernMQ_DuplicateID`` property is not a String.
        CodecLimitError, MessageCodecError: the message cannot be encoded.
    """
    expiration = now + max(1, round(ttl * 1000)) if ttl else 0  # HDR-15
    delivery_time = now + round(delay * 1000)
    message._destination = dest
    message._delivery_mode = mode
    message._priority = prio
    message._timestamp = now if timestamp else 0
    message._expiration = expiration
    message._delivery_time = delivery_time
    message._message_id = message_id
    props = message._properties
    group_id: str | None = None
    group_seq = 0
    dup: str | None = None
    if props:  # most messages have none
        if "JMSXUserID" in props:  # PROP-23: provider-set; the broker sets it
            del props["JMSXUserID"]
            del message._property_types["JMSXUserID"]
        gid = props.get("JMSXGroupID")
        if isinstance(gid, str):
            group_id = gid
        gseq = props.get("JMSXGroupSeq", 0)
        if isinstance(gseq, int) and not isinstance(gseq, bool):
            group_seq = gseq
        value = props.get(_DUP)  # PSF-09: the broker reads it from Send
        if value is not None:
            if not isinstance(value, str):
                raise MessageFormatException(
                    f"{_DUP} must be a String property, not "
                    f"{type(value).__name__}: set it with set_string_property"
                )
            dup = value
    data = encode_message(message)
    # Asked only once the message is encoded: a send that fails above counts nowhere.
    quiet = window is not None and window.quiet_next()
    return c.Send(
        corr=0 if quiet else next_corr(),
        session_id=session_id,
        destination=str(dest),
        message=data,
        persistent=mode == _PERSISTENT,
        priority=prio,
        expiration=expiration,
        delivery_time=delivery_time,
        group_id=group_id,
        group_seq=group_seq,
        duplicate_id=dup,
        quiet=quiet,
    )
