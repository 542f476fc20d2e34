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

* Before loading, the opcodes are read (with ``pickletools``' table; nothing is built) and the
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
from typing import Any, Final

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


# What the scan does per opcode (one table entry per opcode octet, built from pickletools'
# descriptions): the action, how the argument is laid out, the values popped and pushed.
_MARK, _GET, _PUT, _MEMOIZE, _DUP, _INTO_BELOW_MARK, _INTO_BELOW, _STOP, _FROM_MARK = range(9)
_OTHER, _SCALAR = 9, 10  # _SCALAR: pushes one value that holds nothing (a literal)
_FIXED, _LEN1, _LEN4, _LEN4S, _LEN8, _LINE, _LINES2 = range(7)  # argument layouts
_ACTIONS: Final = {
    "MARK": _MARK,
    "GET": _GET,
    "BINGET": _GET,
    "LONG_BINGET": _GET,
    "PUT": _PUT,
    "BINPUT": _PUT,
    "LONG_BINPUT": _PUT,
    "MEMOIZE": _MEMOIZE,
    "DUP": _DUP,
    "APPENDS": _INTO_BELOW_MARK,  # add the values above the mark to the container below
    "SETITEMS": _INTO_BELOW_MARK,
    "ADDITEMS": _INTO_BELOW_MARK,
    "APPEND": _INTO_BELOW,  # add the top one or two values to the container below, in place
    "SETITEM": _INTO_BELOW,
    "BUILD": _INTO_BELOW,
    "STOP": _STOP,
}
# Opcodes whose value is open (may still grow in place, so a reference to it from inside is
# a cycle and counts once) until the first opcode that grows it.
_OPENS: Final = frozenset(
    {"EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET", "LIST", "DICT"}
    | {"NEWOBJ", "NEWOBJ_EX", "REDUCE", "OBJ", "INST"}
)
_Op = tuple[str, int, int, int, int, int, bool]  # name, action, layout, size, pops, pushes, opens


def _layout(arg: Any) -> tuple[int, int]:
    if arg is None:
        return _FIXED, 0
    n = arg.n
    if n >= 0:
        return _FIXED, n
    if n == pickletools.UP_TO_NEWLINE:
        return (_LINES2 if arg.name == "stringnl_noescape_pair" else _LINE), 0
    if n == pickletools.TAKEN_FROM_ARGUMENT1:
        return _LEN1, 0
    if n == pickletools.TAKEN_FROM_ARGUMENT4:
        return _LEN4S, 0
    if n == pickletools.TAKEN_FROM_ARGUMENT4U:
        return _LEN4, 0
    return _LEN8, 0


def _table() -> list[_Op | None]:
    table: list[_Op | None] = [None] * 256
    for op in pickletools.opcodes:
        before = op.stack_before
        layout, size = _layout(op.arg)
        action = _ACTIONS.get(op.name, _OTHER)
        if action == _OTHER and before and before[0] is pickletools.markobject:
            action = _FROM_MARK
        elif action == _OTHER and not before and len(op.stack_after) == 1:
            action = _SCALAR if op.name not in _OPENS else _OTHER
        pops = len(before) - 1 if op.name in ("APPEND", "SETITEM", "BUILD") else len(before)
        entry = (op.name, action, layout, size, pops, len(op.stack_after), op.name in _OPENS)
        table[ord(op.code.encode("latin-1"))] = entry
    return table


_TABLE: Final = _table()


def _scan(data: bytes, budget: PickleBudget) -> int:
    """Simulate the unpickler over the opcodes of ``data`` (see the module docstring) and
    return the literal octets counted. Reads the opcodes directly (as ``pickletools.genops``
    would, without building their arguments).

    Raises:
        MessageFormatException: past the budget.
        ValueError, IndexError, KeyError: the opcodes are malformed.
    """
    max_objects = budget.max_objects
    max_depth = budget.max_depth
    max_bytes = budget.max_bytes
    octets = 0
    stack: list[list[int]] = []  # cells: [objects, depth, 1 while open (see _OPENS)]
    marks: list[list[list[int]]] = []
    memo: dict[int, list[int]] = {}
    table = _TABLE
    scalar = [1, 0, 0]  # shared by every literal of this scan: nothing grows a literal
    end = len(data)
    pos = 0

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

    while True:
        entry = table[data[pos]]
        if entry is None:
            raise ValueError(f"unknown pickle opcode {data[pos]:#04x} at {pos}")
        _name, action, layout, size, pops, pushes, opens = entry
        start = pos = pos + 1
        if layout == _FIXED:
            pos += size
        else:
            if layout == _LINE:
                pos = data.index(b"\n", pos) + 1
            elif layout == _LINES2:
                pos = data.index(b"\n", data.index(b"\n", pos) + 1) + 1
            else:
                width = 1 if layout == _LEN1 else 8 if layout == _LEN8 else 4
                length = int.from_bytes(data[pos : pos + width], "little", signed=layout == _LEN4S)
                if length < 0:
                    raise ValueError(f"negative length in the pickle at {pos}")
                pos += width + length
            octets += pos - start
            if octets > max_bytes:
                raise _over("max_bytes", budget)
        if pos > end:
            raise ValueError("the pickle is truncated")
        if action == _SCALAR:
            stack.append(scalar)
        elif action == _OTHER:
            if pops:
                items = stack[-pops:]
                del stack[-pops:]
            else:
                items = []
            for _ in range(pushes):
                cell = [1, 0, 0]
                if items:
                    grow(cell, items)
                if opens:
                    cell[2] = 1
                stack.append(cell)
        elif action in (_GET, _PUT):
            key = (
                int(data[start : pos - 1])
                if layout == _LINE
                else int.from_bytes(data[start:pos], "little")
            )
            if action == _GET:
                cell = memo[key]
                # A value still being built is an ancestor (a cycle): it counts once.
                stack.append([1, 0, 0] if cell[2] else cell)
            else:
                if key >= max_objects:
                    raise _over("max_objects", budget)
                memo[key] = stack[-1]
        elif action == _MARK:
            marks.append(stack)
            stack = []
        elif action == _MEMOIZE:
            if len(memo) >= max_objects:
                raise _over("max_objects", budget)
            memo[len(memo)] = stack[-1]
        elif action == _INTO_BELOW:
            items = stack[-pops:]
            del stack[-pops:]
            grow(stack[-1], items)
        elif action == _INTO_BELOW_MARK:
            items = stack
            stack = marks.pop()
            grow(stack[-1], items)
        elif action == _FROM_MARK:
            items = stack
            stack = marks.pop()
            for _ in range(pushes):  # LIST, TUPLE, DICT, FROZENSET, INST, OBJ; POP_MARK: none
                cell = [1, 0, 0]
                grow(cell, items)
                if opens:
                    cell[2] = 1
                stack.append(cell)
        elif action == _DUP:
            stack.append(stack[-1])
        else:  # STOP
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
