"""What the provider reports about itself: :class:`ConnectionMetaData` (JMS 2.0 §4.3.7; CONN-23).

Theory of operation
-------------------
Constant class attributes, read by ``Connection.metadata`` and ``JMSContext.metadata``; in a
module of its own so that both reach it without importing each other.
"""

from __future__ import annotations

from ternmq._version import __version__

__all__ = ["ConnectionMetaData"]


class ConnectionMetaData:
    """What the provider reports about itself (JMS ``ConnectionMetaData``, CONN-23)."""

    jms_version = "2.0"
    jms_major_version = 2
    jms_minor_version = 0
    provider_name = "ternmq"
    provider_version = __version__
    provider_major_version = int(__version__.split(".")[0])
    provider_minor_version = int(__version__.split(".")[1])
    jmsx_property_names = ("JMSXDeliveryCount", "JMSXGroupID", "JMSXGroupSeq")

    def __repr__(self) -> str:
        return f"ConnectionMetaData(provider='ternmq {self.provider_version}', jms='2.0')"
