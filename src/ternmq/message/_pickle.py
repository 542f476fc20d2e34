"""Pickle with a restricted unpickler for ObjectMessage bodies (catalog BODY-36 … BODY-38).

Unpickling runs code named by the data, so a received body may only name globals from an
allow-list: a fixed set of harmless ``builtins`` (containers, scalars, exception classes;
never ``eval``, ``exec``, ``getattr``, ``open``, ``__import__`` …) plus the modules the
connection factory trusts. A trusted module ``"myapp"`` also trusts its submodules
(``"myapp.models"``). A global is accepted only if the object found there is not a module,
is defined in a trusted module (its ``__module__``), and no part of its dotted name is a
dunder, so a trusted module cannot be used as a path to something it merely imports.

Size budget
-----------
The allow-list stops code execution, not amplification: ``list(range(30_000_000))`` is a
61-byte pickle that builds 1.2 GB. So a load also keeps within a :class:`PickleBudget`
(objects, octets, nesting depth), refusing with a ``MessageFormatException`` that names the
limit. Two checks make it:

* Before loading, the opcodes are read (``pickletools.genops``, nothing is built) and the
  unpickler's stack and memo are simulated with one small ``[objects, depth]`` cell per
  value: a container's cell counts the objects of the tree it expands to, a memo reference
  (``GET``) counting its whole target again, so a "billion laughs" of repeated references is
  refused as the tree it would be when traversed; a reference to a list, dict, set or
  object that nothing has been added to yet (an ancestor still being built: a cycle, such as
  a child's pointer to its parent) counts one. Literal strings and bytes count their
  octets; a memo index past the object budget is refused (the C unpickler would size its
  memo table to it).
* While loading, the builtins that can build much from little (``list``, ``tuple``,
  ``set``, ``frozenset``, ``dict``, ``bytes``, ``bytearray``, ``str`` called with a length
  or a sized argument such as a ``range``) are wrapped: the size of their result is charged
  to the same budget before it is built.

A value mutated after another container took it from the memo is counted with its size at
that time (the simulation does not propagate later growth upwards): such a pickle can still
describe a deep or widely shared structure, but not allocate more than the budget while
loading. Classes of trusted modules are the application's: what they build is not charged.
"""

from __future__ import annotations

import builtins
import io
import pickle
import pickletools
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, cast

from ternmq.errors import MessageFormatException

__all__ = ["DEFAULT_BUDGET", "SAFE_BUILTINS", "PickleBudget", "dumps", "loads"]

#: The ``builtins`` names any ObjectMessage body may use.
SAFE_BUILTINS: Final = frozenset(
    {
        "bool",
        "bytearray",
        "bytes",
        "complex",
        "dict",
        "Ellipsis",
        "float",
        "frozenset",
        "int",
        "list",
        "NotImplemented",
        "object",
        "range",
        "set",
        "slice",
        "str",
        "tuple",
    }
    | {
        name
        for name, obj in vars(builtins).items()
        if isinstance(obj, type) and issubclass(obj, BaseException)
    }
)

_PROTOCOL: Final = 5


def dumps(obj: object) -> bytes:
    """Pickle ``obj`` now (so later changes to it do not reach the message, BODY-36).

    Raises:
        MessageFormatException: ``obj`` cannot be pickled (BODY-37).
    """
    try:
        return pickle.dumps(obj, protocol=_PROTOCOL)
    except Exception as exc:  # PicklingError, TypeError, AttributeError, RecursionError …
        raise MessageFormatException(
            f"cannot serialize a {type(obj).__name__} for an ObjectMessage: {exc}",
            linked_exception=exc,
        ) from exc


@dataclass(frozen=True)
class PickleBudget:
    """How much one ObjectMessage body may build when it is deserialized.

    Args:
        max_objects: objects, counting a shared object once per reference (default
            1,000,000).
        max_bytes: octets of strings, bytes and bytearrays, literal or built (default 64 MiB).
        max_depth: nesting depth of containers and objects (default 1,000).

    Raises:
        ValueError: a limit is below 1.
    """

    max_objects: int = 1_000_000
    max_bytes: int = 64 * 1024 * 1024
    max_depth: int = 1_000

    def __post_init__(self) -> None:
        for name in ("max_objects", "max_bytes", "max_depth"):
            if getattr(self, name) < 1:
                raise ValueError(f"PickleBudget.{name} must be at least 1")


#: The budget of a body whose connection factory sets none.
DEFAULT_BUDGET: Final = PickleBudget()

_WHAT: Final = {
    "max_objects": "objects",
    "max_bytes": "octets",
    "max_depth": "levels of nesting",
}


def _over(limit: str, budget: PickleBudget) -> MessageFormatException:
    maximum = getattr(budget, limit)
    return MessageFormatException(
        f"the ObjectMessage body would build more than {limit} = {maximum:,} {_WHAT[limit]} "
        "when deserialized; if the object is genuine, raise the limit with "
        f"PickleBudget({limit}=...) where the body is read (the pickle_budget of the "
        "connection factory)"
    )


# Opcodes that add the values above a mark (or the one or two values above them) to the
# container below, in place.
_INTO_BELOW_MARK: Final = frozenset({"APPENDS", "SETITEMS", "ADDITEMS"})
_INTO_BELOW: Final = {"APPEND": 1, "SETITEM": 2, "BUILD": 1}
# Opcodes whose value is open (may still grow in place, so a reference to it from inside is
# a cycle and counts once) until the first opcode that grows it.
_OPENS: Final = frozenset(
    {"EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET", "LIST", "DICT"}
    | {"NEWOBJ", "NEWOBJ_EX", "REDUCE", "OBJ", "INST"}
)
_GETS: Final = frozenset({"GET", "BINGET", "LONG_BINGET"})
_PUTS: Final = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})


def _scan(data: bytes, budget: PickleBudget) -> int:
    """Simulate the unpickler over the opcodes of ``data`` (see the module docstring) and
    return the literal octets counted.

    Raises:
        MessageFormatException: past the budget.
        ValueError: the opcodes are malformed (``pickletools``).
    """
    max_objects = budget.max_objects
    max_depth = budget.max_depth
    max_bytes = budget.max_bytes
    octets = 0
    stack: list[list[int]] = []  # cells: [objects, depth, 1 while open (see _OPENS)]
    marks: list[list[list[int]]] = []
    memo: dict[int, list[int]] = {}

    def grow(into: list[int], items: list[list[int]]) -> None:
        for item in items:
            into[0] += item[0]
            if item[1] >= into[1]:
                into[1] = item[1] + 1
        if into[0] > max_objects:
            raise _over("max_objects", budget)
        if into[1] > max_depth:
            raise _over("max_depth", budget)
        into[2] = 0

    for op, arg, _pos in pickletools.genops(data):
        name = op.name
        if isinstance(arg, (str, bytes, bytearray)):
            octets += len(arg)
            if octets > max_bytes:
                raise _over("max_bytes", budget)
        if name == "MARK":
            marks.append(stack)
            stack = []
        elif name in _GETS:
            cell = memo[cast(int, arg)]
            # A value still being built is an ancestor (a cycle): it counts once.
            stack.append([1, 0, 0] if cell[2] else cell)
        elif name in _PUTS or name == "MEMOIZE":
            key = len(memo) if name == "MEMOIZE" else cast(int, arg)
            if key >= max_objects:
                raise _over("max_objects", budget)
            memo[key] = stack[-1]
        elif name == "DUP":
            stack.append(stack[-1])
        elif name in _INTO_BELOW_MARK:
            items = stack
            stack = marks.pop()
            grow(stack[-1], items)
        elif name in _INTO_BELOW:
            n = _INTO_BELOW[name]
            items = stack[-n:]
            del stack[-n:]
            grow(stack[-1], items)
        elif name == "STOP":
            break
        else:
            before = op.stack_before
            if before and before[0] is pickletools.markobject:
                items = stack
                stack = marks.pop()
            elif before:
                items = stack[-len(before) :]
                del stack[-len(before) :]
            else:
                items = []
            for _ in op.stack_after:
                cell = [1, 0, 0]
                if items:
                    grow(cell, items)
                if name in _OPENS:
                    cell[2] = 1
                stack.append(cell)
    return octets


# Builtins that build a result as large as an int argument says (the others: as large as a
# sized argument is long), and which of them count octets rather than objects.
_BY_INT: Final = frozenset({bytes, bytearray})
_OCTETS: Final = frozenset({bytes, bytearray, str})
_SCALARS: Final = (str, bytes, bytearray, int, float, complex, type(None))


class _Charged:
    """A builtin the unpickler calls (``REDUCE``) whose result is charged to the budget
    before it is built."""

    __slots__ = ("_real", "_unpickler")

    def __init__(self, real: type, unpickler: _RestrictedUnpickler) -> None:
        self._real = real
        self._unpickler = unpickler

    def __call__(self, *args: Any, **kwargs: Any) -> object:
        real = self._real
        size = len(kwargs)
        for arg in args:
            if isinstance(arg, int) and not isinstance(arg, bool):
                if real in _BY_INT:
                    size += max(arg, 0)
                continue
            if real is str and not isinstance(arg, _SCALARS):
                # str() of a container is its repr, as large as the tree it expands to.
                raise MessageFormatException(
                    "the ObjectMessage body calls str() on a "
                    f"{type(arg).__name__}, which ternmq does not deserialize"
                )
            try:
                size += len(arg)
            except OverflowError:  # a range longer than sys.maxsize
                size = 1 << 63
            except TypeError:
                size += 1
        self._unpickler.charge(size, real in _OCTETS)
        return real(*args, **kwargs)


_CHARGED: Final = frozenset(
    {"list", "tuple", "set", "frozenset", "dict", "bytes", "bytearray", "str"}
)


def _trusted(module: str, trusted: frozenset[str]) -> bool:
    return any(module == t or module.startswith(t + ".") for t in trusted)


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(
        self, data: bytes, trusted: frozenset[str], budget: PickleBudget, objects: int, octets: int
    ) -> None:
        super().__init__(io.BytesIO(data))
        self._trusted = trusted
        self._budget = budget
        self._objects = objects
        self._octets = octets

    def charge(self, size: int, octets: bool) -> None:
        """Count ``size`` objects (or octets) a builtin is about to build.

        Raises:
            MessageFormatException: past the budget.
        """
        if octets:
            self._octets += size
            if self._octets > self._budget.max_bytes:
                raise _over("max_bytes", self._budget)
        else:
            self._objects += size
            if self._objects > self._budget.max_objects:
                raise _over("max_objects", self._budget)

    def find_class(self, module: str, name: str) -> object:
        if module in ("builtins", "__builtin__"):
            if name in SAFE_BUILTINS:
                real = getattr(builtins, name)
                return _Charged(real, self) if name in _CHARGED else real
        elif _trusted(module, self._trusted) and not any(
            part.startswith("__") and part.endswith("__") for part in name.split(".")
        ):
            obj = super().find_class(module, name)
            owner = getattr(obj, "__module__", None)
            if (
                not isinstance(obj, types.ModuleType)
                and isinstance(owner, str)
                and _trusted(owner, self._trusted)
            ):
                return obj
        raise MessageFormatException(
            f"the ObjectMessage body uses {module}.{name}, which is not trusted; add its "
            "module to the connection factory's trusted modules if it is safe"
        )


def loads(
    data: bytes, trusted_modules: Iterable[str] | None, budget: PickleBudget = DEFAULT_BUDGET
) -> object:
    """Unpickle ``data`` allowing only safe builtins and ``trusted_modules``, within
    ``budget`` (objects, octets, depth; see the module docstring).

    Raises:
        MessageFormatException: the data names an untrusted global, would build more than
            ``budget`` allows (the message names the limit), or is not a pickle this
            process can load (BODY-37, BODY-38).
    """
    trusted = frozenset(trusted_modules or ()) - {"builtins", "__builtin__"}
    try:
        octets = _scan(data, budget)
        return _RestrictedUnpickler(data, trusted, budget, 0, octets).load()
    except MessageFormatException:
        raise
    except Exception as exc:  # UnpicklingError, EOFError, ImportError, AttributeError …
        raise MessageFormatException(
            f"cannot deserialize the ObjectMessage body: {exc}", linked_exception=exc
        ) from exc
