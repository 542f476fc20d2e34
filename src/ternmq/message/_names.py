"""Property-name rules (JMS 2.0 §3.5.1, §3.5.9, §3.5.10; catalog PROP-04, PROP-05, PROP-20).

A property name must be a message-selector identifier (SEL-12): a Java identifier start
character followed by Java identifier part characters, and not one of the selector keywords
in any ASCII letter case (A-25). Java's classes are expressed through Unicode general
categories, evaluated with Python's Unicode tables (A-22).

Names starting ``JMSX`` (exact case) are reserved for the JMS-defined properties of
:data:`JMSX_TYPES`; names starting ``JMS_`` are provider-specific. ternmq's own vendor
prefix is :data:`VENDOR_PREFIX`.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import Final

from ternmq.message._types import T

__all__ = [
    "JMSX_TYPES",
    "KEYWORDS",
    "VENDOR_PREFIX",
    "check_property_name",
    "is_identifier",
]

#: Selector keywords (SEL-10); compared ASCII-case-insensitively.
KEYWORDS: Final = frozenset(
    {"NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "ESCAPE", "NULL", "TRUE", "FALSE"}
)

#: The JMS-defined properties a client may carry, with their JMS types (PROP-20).
#: JMSXState is provider-internal and never exposed, so it is not settable.
JMSX_TYPES: Final[dict[str, T]] = {
    "JMSXUserID": T.STRING,
    "JMSXAppID": T.STRING,
    "JMSXDeliveryCount": T.INT,
    "JMSXGroupID": T.STRING,
    "JMSXGroupSeq": T.INT,
    "JMSXProducerTXID": T.STRING,
    "JMSXConsumerTXID": T.STRING,
    "JMSXRcvTimestamp": T.LONG,
}

#: The prefix of ternmq's provider-specific properties (PROP-27).
VENDOR_PREFIX: Final = "JMS_TernMQ_"

_START_CATEGORIES: Final = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nl", "Sc", "Pc"})
_PART_CATEGORIES: Final = _START_CATEGORIES | {"Nd", "Mn", "Mc", "Cf"}


def _is_part(ch: str) -> bool:
    o = ord(ch)
    if o <= 0x08 or 0x0E <= o <= 0x1B or 0x7F <= o <= 0x9F:
        return True  # Character.isIdentifierIgnorable
    return unicodedata.category(ch) in _PART_CATEGORIES


@functools.lru_cache(maxsize=4096)
def is_identifier(name: str) -> bool:
    """True when ``name`` is a valid message-selector identifier (SEL-12). Never raises."""
    if not isinstance(name, str) or not name:
        return False
    if unicodedata.category(name[0]) not in _START_CATEGORIES:
        return False
    if not all(_is_part(ch) for ch in name[1:]):
        return False
    return not (name.isascii() and name.upper() in KEYWORDS)


def check_property_name(name: object) -> str:
    """Validate a property name given to a setter and return it.

    Raises:
        ValueError: ``name`` is None or empty (PROP-04), not a selector identifier or a
            keyword (PROP-05), or starts with the reserved ``JMSX`` prefix without being one of
            the JMS-defined properties of :data:`JMSX_TYPES` (PROP-20).
        TypeError: ``name`` is neither a ``str`` nor None.
    """
    if name is None or name == "":
        raise ValueError("a property name must not be None or empty")
    if not isinstance(name, str):
        raise TypeError(f"a property name must be a str, not {type(name).__name__}")
    if not is_identifier(name):
        raise ValueError(
            f"{name!r:.80} is not a valid property name: use a selector identifier "
            "(a letter, '_' or '$' then letters, digits, '_' or '$'), not a keyword such as "
            "NOT, AND, OR, BETWEEN, LIKE, IN, IS, ESCAPE, NULL, TRUE or FALSE"
        )
    if name.startswith("JMSX") and name not in JMSX_TYPES:
        raise ValueError(
            f"the prefix 'JMSX' is reserved for JMS-defined properties; {name!r:.80} is not "
            f"one of {', '.join(JMSX_TYPES)}"
        )
    return name
