"""ObjectMessage: one serialized Python object (JMS 2.0 §3.11; catalog BODY-36 … BODY-38).

The body is ``_payload``, the pickled bytes (None = no object), made when the object is
assigned. Reads unpickle a new copy through the restricted unpickler of ``_pickle``, allowing
the safe builtins plus ``_trusted_modules`` (set by the connection factory on received
messages; None means builtins only), within ``_pickle_budget`` (the objects, octets and
nesting depth the body may build; ``_pickle.DEFAULT_BUDGET`` unless the receiving
connection sets another).
"""

from __future__ import annotations

from typing import ClassVar, TypeVar

from ternmq.errors import MessageFormatException, MessageNotWriteableException
from ternmq.message import _pickle
from ternmq.message._message import Message

__all__ = ["ObjectMessage"]

_B = TypeVar("_B")


class ObjectMessage(Message):
    """A message whose body is one pickled Python object (JMS ``ObjectMessage``).

    Args:
        obj: the initial object, pickled now (None = no body).

    Raises:
        MessageFormatException: ``obj`` cannot be pickled.
    """

    __slots__ = ("_payload", "_pickle_budget", "_trusted_modules")
    body_type: ClassVar[str] = "object"

    _payload: bytes | None
    _trusted_modules: frozenset[str] | None
    _pickle_budget: _pickle.PickleBudget

    def __init__(self, obj: object = None) -> None:
        super().__init__()
        self._trusted_modules = None
        self._pickle_budget = _pickle.DEFAULT_BUDGET
        self._payload = None if obj is None else _pickle.dumps(obj)

    @property
    def object(self) -> object:
        """A newly deserialized copy of the body object, or None (BODY-36).

        Reading raises ``MessageFormatException`` when the body names a class outside the
        trusted modules, would build more than its budget allows (objects, octets, nesting
        depth: the message names the limit) or cannot be deserialized (BODY-37, BODY-38).
        Assigning pickles the value at once and raises ``MessageNotWriteableException`` on
        a received message (until ``clear_body()``) and ``MessageFormatException`` for an
        unpicklable value.
        """
        if self._payload is None:
            return None
        return _pickle.loads(self._payload, self._trusted_modules, self._pickle_budget)

    @object.setter
    def object(self, value: object) -> None:
        if self._read_only_body:
            raise MessageNotWriteableException(
                "the body of a received ObjectMessage is read-only; call clear_body() first"
            )
        self._payload = None if value is None else _pickle.dumps(value)

    def clear_body(self) -> None:
        """Remove the object and make the body writable (BODY-04). Never raises."""
        self._payload = None
        self._read_only_body = False

    def _has_body(self) -> bool:
        return self._payload is not None

    def _body_as(self, cls: type[_B]) -> _B:
        value = self.object
        if not isinstance(value, cls):
            raise MessageFormatException(
                f"the ObjectMessage holds a {type(value).__name__}, which is not assignable "
                f"to {cls.__name__}"
            )
        return value

    def _copy_body(self, dup: Message) -> None:
        assert isinstance(dup, ObjectMessage)
        dup._payload = self._payload
        dup._trusted_modules = self._trusted_modules
        dup._pickle_budget = self._pickle_budget
