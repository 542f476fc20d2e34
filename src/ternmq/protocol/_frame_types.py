"""The classes of the native frame codec, kept interpreted: its error and the ``Heartbeat``
command.

Theory of operation: ``frames.py`` holds the frame codec's functions (``encode``,
``FrameDecoder``) and can be compiled with mypyc (``setup.py``'s ``COMPILED``; left out today,
measured slower compiled); what mypyc cannot take lives here. A compiled msgspec ``Struct``
loses its class options (``tag=``, ``array_like=``), and :class:`ProtocolError` subclasses
the interpreted JMS exception tree and is subclassed by the STOMP and OpenWire codecs.
``frames.py`` re-exports these names: import them from there.

Sans-IO: no socket, thread, clock or log here.
"""

from __future__ import annotations

import msgspec

from ternmq.errors import JMSException
from ternmq.protocol import commands as c

__all__ = ["Heartbeat", "ProtocolError", "WireCommand"]


class ProtocolError(JMSException):
    """Malformed or oversized input from the peer; the connection must be closed."""


class Heartbeat(msgspec.Struct, frozen=True, tag=True, array_like=True):
    """Sent when a side has nothing else to say for a heartbeat interval."""


WireCommand = c.Command | Heartbeat
