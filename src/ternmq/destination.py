"""Destinations: queues, topics and their temporary kinds (JMS 2.0 §4.4.3, §6.6).

A destination is an immutable value identified by its kind and name. Its text form is
``queue://NAME``, ``topic://NAME``, ``temp-queue://NAME`` or ``temp-topic://NAME``;
:func:`destination` parses that form. Temporary destinations carry a hidden owner hook so that
only the owning connection can delete them (TMP-08); equality ignores the owner.
"""

from __future__ import annotations

import re
from typing import Literal, Protocol

from ternmq.errors import IllegalStateException, InvalidDestinationException

__all__ = [
    "Destination",
    "Queue",
    "TemporaryQueue",
    "TemporaryTopic",
    "Topic",
    "destination",
]

Kind = Literal["queue", "topic", "temp-queue", "temp-topic"]

# Names: printable, no whitespace or control characters, no "://" and at most 255 characters.
MAX_NAME_LENGTH = 255
_NAME_RE = re.compile(r"[^\s\x00-\x1f\x7f/]+(?:/[^\s\x00-\x1f\x7f/]+)*")


def _validate_name(kind: str, name: object) -> str:
    if not isinstance(name, str):
        raise InvalidDestinationException(f"a {kind} name must be a str, not {type(name).__name__}")
    if not name:
        raise InvalidDestinationException(f"a {kind} name must not be empty")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidDestinationException(
            f"{kind} name is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}"
        )
    if "://" in name or not _NAME_RE.fullmatch(name):
        raise InvalidDestinationException(
            f"invalid {kind} name {name!r}: use printable characters without spaces, "
            "control characters, empty path segments or '://'"
        )
    return name


class Destination:
    """Base of every destination: an immutable (kind, name) value."""

    __slots__ = ("_hash", "_name", "_uri")
    kind: Kind = "queue"

    def __init__(self, name: str) -> None:
        self._name = _validate_name(self.kind, name)
        # Immutable, so the text and the hash are made once: destinations are dict keys and
        # are written out on every message the broker routes.
        self._uri = f"{self.kind}://{self._name}"
        self._hash = hash(self._uri)

    @property
    def name(self) -> str:
        """The destination's name, without the ``kind://`` prefix."""
        return self._name

    @property
    def is_topic(self) -> bool:
        """True for topics and temporary topics."""
        return self.kind in ("topic", "temp-topic")

    @property
    def is_temporary(self) -> bool:
        """True for temporary queues and topics."""
        return self.kind.startswith("temp-")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Destination):
            return NotImplemented
        return self._uri == other._uri  # "kind://name": the kind has no "://" in it

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return self._uri

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return (destination, (str(self),))


class Queue(Destination):
    """A point-to-point destination (JMS ``Queue``)."""

    __slots__ = ()
    kind: Kind = "queue"

    @property
    def queue_name(self) -> str:
        """The queue's name (JMS ``getQueueName``)."""
        return self._name


class Topic(Destination):
    """A publish/subscribe destination (JMS ``Topic``)."""

    __slots__ = ()
    kind: Kind = "topic"

    @property
    def topic_name(self) -> str:
        """The topic's name (JMS ``getTopicName``)."""
        return self._name


class TemporaryOwner(Protocol):
    """What a temporary destination needs from the connection that created it."""

    def _delete_temporary(self, dest: Destination) -> None: ...


class _Temporary:
    """Mixin: a temporary destination can be deleted by its owning connection only."""

    __slots__ = ()
    _owner: TemporaryOwner | None

    def delete(self) -> None:
        """Delete this temporary destination and its messages (TMP-06, TMP-07, TMP-08).

        Raises:
            IllegalStateException: this object was not created by a connection of this
                process (e.g. it came from ``jms_reply_to``), or a consumer is still open on it.
        """
        owner = getattr(self, "_owner", None)
        if owner is None:
            raise IllegalStateException(
                f"{self} can only be deleted by the connection that created it"
            )
        owner._delete_temporary(self)


class TemporaryQueue(_Temporary, Queue):
    """A queue that lives as long as the connection that created it (TMP)."""

    __slots__ = ("_owner",)
    kind: Kind = "temp-queue"

    def __init__(self, name: str, owner: TemporaryOwner | None = None) -> None:
        super().__init__(name)
        self._owner = owner


class TemporaryTopic(_Temporary, Topic):
    """A topic that lives as long as the connection that created it (TMP)."""

    __slots__ = ("_owner",)
    kind: Kind = "temp-topic"

    def __init__(self, name: str, owner: TemporaryOwner | None = None) -> None:
        super().__init__(name)
        self._owner = owner


_KINDS: dict[str, type[Destination]] = {
    "queue": Queue,
    "topic": Topic,
    "temp-queue": TemporaryQueue,
    "temp-topic": TemporaryTopic,
}


def destination(text: str) -> Destination:
    """Parse ``queue://NAME``, ``topic://NAME``, ``temp-queue://NAME`` or ``temp-topic://NAME``.

    Raises:
        InvalidDestinationException: the text has no known ``kind://`` prefix or the name is
            invalid.
    """
    if not isinstance(text, str):
        raise InvalidDestinationException(
            f"a destination must be given as 'queue://NAME' or 'topic://NAME', not {text!r}"
        )
    kind, sep, name = text.partition("://")
    cls = _KINDS.get(kind)
    if not sep or cls is None:
        raise InvalidDestinationException(
            f"cannot parse destination {text!r}: write 'queue://NAME' or 'topic://NAME'"
        )
    return cls(name)
