"""House rules that a test can check: the public surface and the purity of the core."""

from __future__ import annotations

import ast
import pathlib
import re

import ternmq

SRC = pathlib.Path(ternmq.__file__).resolve().parent

PUBLIC = {
    # API.md: factory, connection, session, producer, consumer, browser, context
    "ConnectionFactory",
    "Connection",
    "ConnectionMetaData",
    "Session",
    "MessageProducer",
    "MessageConsumer",
    "QueueBrowser",
    "CompletionListener",
    "JMSContext",
    "JMSProducer",
    "JMSConsumer",
    "EmbeddedBroker",
    # destinations
    "Destination",
    "Queue",
    "Topic",
    "TemporaryQueue",
    "TemporaryTopic",
    "destination",
    # messages and constants
    "Message",
    "TextMessage",
    "BytesMessage",
    "MapMessage",
    "StreamMessage",
    "ObjectMessage",
    "DeliveryMode",
    # exceptions (EXC-01, EXC-02)
    "JMSException",
    "JMSRuntimeException",
    "IllegalStateException",
    "IllegalStateRuntimeException",
    "InvalidClientIDException",
    "InvalidClientIDRuntimeException",
    "InvalidDestinationException",
    "InvalidDestinationRuntimeException",
    "InvalidSelectorException",
    "InvalidSelectorRuntimeException",
    "JMSSecurityException",
    "JMSSecurityRuntimeException",
    "MessageEOFException",
    "MessageFormatException",
    "MessageFormatRuntimeException",
    "MessageNotReadableException",
    "MessageNotWriteableException",
    "MessageNotWriteableRuntimeException",
    "ResourceAllocationException",
    "ResourceAllocationRuntimeException",
    "TransactionInProgressException",
    "TransactionInProgressRuntimeException",
    "TransactionRolledBackException",
    "TransactionRolledBackRuntimeException",
    "UnsupportedOperationException",
    "__version__",
}


def test_public_names_are_pinned() -> None:
    """STYLE rule 7: ``ternmq.__all__`` is exactly the API.md surface, and each name imports."""
    assert set(ternmq.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(ternmq, name) is not None


FORBIDDEN = {
    "socket",
    "asyncio",
    "threading",
    "time",
    "logging",
    "selectors",
    "ssl",
    "subprocess",
    "multiprocessing",
    "concurrent",
}


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_pure_packages_do_no_io() -> None:
    """STYLE rule 1: message/, selector/ and protocol/ import no socket, thread, clock or log."""
    for package in ("message", "selector", "protocol"):
        for path in (SRC / package).rglob("*.py"):
            bad = _imports(path) & FORBIDDEN
            assert not bad, f"{path.relative_to(SRC)} imports {sorted(bad)}"


def test_broker_core_has_no_io() -> None:
    """ARCHITECTURE: broker/ is synchronous, lock-free code (the clock module aside, and the
    embedded host, whose owner context is a lock and whose timer is a thread)."""
    for path in (SRC / "broker").rglob("*.py"):
        if path.name in ("clock.py", "embedded.py"):
            continue
        bad = _imports(path) & (FORBIDDEN - {"time"})
        assert not bad, f"{path.relative_to(SRC)} imports {sorted(bad)}"


def test_xa_01_asf_01_not_offered() -> None:
    """XA-01 (S-XA-1), ASF-01: ternmq v1 offers no XA and no application-server facilities, so
    it exposes none of their names; local transactions still work (covered by the TX suite).
    The "MUST if offered" items XA-02..XA-05 and ASF-02..ASF-07 therefore do not apply."""
    for name in (
        "XAConnectionFactory",
        "XAConnection",
        "XASession",
        "XAJMSContext",
        "ServerSessionPool",
        "ServerSession",
        "ConnectionConsumer",
    ):
        assert not hasattr(ternmq, name)
    from ternmq.client import Connection

    for name in (
        "create_connection_consumer",
        "create_durable_connection_consumer",
        "create_shared_connection_consumer",
        "create_shared_durable_connection_consumer",
    ):
        assert not hasattr(Connection, name)


def test_spark_is_optional() -> None:
    """Only ``ternmq.spark`` (the extra ``ternmq[spark]``) may import pyspark, pyarrow or py4j:
    ``import ternmq`` and every other module work without them."""
    optional = {"pyspark", "pyarrow", "py4j"}
    for path in SRC.rglob("*.py"):
        if (SRC / "spark") in path.parents:
            continue
        bad = _imports(path) & optional
        assert not bad, f"{path.relative_to(SRC)} imports {sorted(bad)}"


# --- The import graph and type checks of issue 16 ("the house for many protocols and stores").
#
# Both rules read the source with ``ast`` instead of importing it, so that an import inside a
# function or under ``TYPE_CHECKING`` counts as much as one at the top of a module: the layers
# are a property of the code as written, not of what a run happens to load.


def _module_name(path: pathlib.Path) -> str:
    """``.../ternmq/store/sqlite.py`` -> ``ternmq.store.sqlite``; a package is its ``__init__``."""
    parts = ("ternmq", *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _source_modules() -> dict[str, pathlib.Path]:
    return {_module_name(path): path for path in sorted(SRC.rglob("*.py"))}


def _resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names, relative levels resolved against ``module``."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    # ``from . import x`` in a package's ``__init__`` is relative to the package itself.
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, node.module] if node.module else base)


def _import_edges(modules: dict[str, pathlib.Path]) -> dict[str, dict[str, list[int]]]:
    """module -> {imported ternmq module -> [line, ...]}, for every import anywhere in the file.

    ``import ternmq.a.b`` imports ``ternmq.a.b``; ``from ternmq.a import b`` imports the module
    ``ternmq.a.b`` when ``b`` is one, and the package or module ``ternmq.a`` for any other name
    (a package means its ``__init__``). Parent packages that Python also runs are not counted:
    every module would otherwise depend on ``ternmq/__init__`` and the graph would say nothing.
    """
    edges: dict[str, dict[str, list[int]]] = {}
    for name, path in modules.items():
        out: dict[str, list[int]] = {}
        is_package = path.name == "__init__.py"

        def add(target: str, line: int, out: dict[str, list[int]] = out) -> None:
            if target in modules:
                out.setdefault(target, []).append(line)

        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    add(alias.name, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                source = _resolve_from(name, is_package, node)
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    add(submodule if submodule in modules else source, node.lineno)
        edges[name] = out
    return edges


def _cycles(edges: dict[str, dict[str, list[int]]]) -> list[list[str]]:
    """Strongly connected components with more than one module, or a module importing itself
    (Tarjan's algorithm, iterative so that a deep chain cannot hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    found.append(sorted(component))
    return sorted(found)


def _describe_cycle(component: list[str], edges: dict[str, dict[str, list[int]]]) -> str:
    members = set(component)
    lines = [f"cycle among {len(component)} module(s): {', '.join(component)}"]
    for module in component:
        for target, at in sorted(edges[module].items()):
            if target in members:
                where = ", ".join(str(line) for line in sorted(set(at)))
                lines.append(f"    {module} -> {target}  (line {where})")
    return "\n".join(lines)


def test_import_graph_helpers(tmp_path: pathlib.Path) -> None:
    """The walker itself: relative imports resolve, submodules count, imports inside functions
    and under ``TYPE_CHECKING`` count, cycles and self-loops are found, and a chain without a
    back edge is not a cycle."""
    node = ast.parse("from ..store import sqlite").body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _resolve_from("ternmq.server.app", False, node) == "ternmq.store"
    node = ast.parse("from . import _base").body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _resolve_from("ternmq.store", True, node) == "ternmq.store"
    assert _module_name(SRC / "store" / "__init__.py") == "ternmq.store"
    assert _module_name(SRC / "store" / "sqlite.py") == "ternmq.store.sqlite"
    files = {
        "p": "from . import a\n",
        "p.a": "import typing\nif typing.TYPE_CHECKING:\n    from p.b import Thing\n",
        "p.b": "def f():\n    from .c import g\n",
        "p.c": "from p import a, name_in_init\n",
    }
    modules = {}
    for name, text in files.items():
        path = tmp_path / f"{name}.py"
        path.write_text(text, encoding="utf-8")
        modules[name] = path
    edges = _import_edges(modules)
    # ``p`` is a plain module here (not an ``__init__``), so ``from . import a`` is relative to
    # its parent and names nothing in the set; the other three are chained and closed by ``c``.
    assert edges == {
        "p": {},
        "p.a": {"p.b": [3]},
        "p.b": {"p.c": [2]},
        "p.c": {"p.a": [1], "p": [1]},
    }
    assert _cycles(edges) == [["p.a", "p.b", "p.c"]]
    graph = {"a": {"b": [1]}, "b": {"c": [2]}, "c": {"a": [3]}, "d": {"d": [4]}, "e": {"a": [5]}}
    assert _cycles(graph) == [["a", "b", "c"], ["d"]]
    assert _cycles({"a": {"b": [1]}, "b": {}}) == []


def test_no_import_cycles() -> None:
    """Issue 16: no import cycle among the modules of ``src/ternmq``, counting imports inside
    functions and under ``TYPE_CHECKING`` (a cycle at run time is a layering error at rest)."""
    edges = _import_edges(_source_modules())
    cycles = _cycles(edges)
    assert not cycles, "import cycles in src/ternmq:\n" + "\n".join(
        _describe_cycle(component, edges) for component in cycles
    )


# The layers of ARCHITECTURE.md, lowest first: a module may import its own layer's package and
# any lower layer, never a higher one, nor a sibling package of its layer (transport/ and
# server/ do not know each other). ``ternmq`` itself (``__init__``, the public surface) is on
# top: only the command line, which is an application of the public API, imports it.
LAYERS: dict[str, int] = {
    "_version": 0,
    "_variant": 0,  # which variant runs (compiled or pure); imported first by __init__
    "errors": 0,
    "destination": 1,
    "_sched": 1,
    "message": 2,
    "selector": 2,
    "protocol": 2,
    "store": 3,
    "broker": 4,
    "transport": 5,
    "server": 5,
    "client": 6,
    "spark": 7,
    "admin": 7,  # the public admin client, over client/
    "cli": 8,  # the command line runs the spark demo too
    "testing": 8,
}


def _layer(module: str) -> tuple[str, int]:
    parts = module.split(".")
    if len(parts) == 1:
        return "ternmq", 9
    return parts[1], LAYERS[parts[1]]


def test_every_top_level_module_has_a_layer() -> None:
    """A new package or top-level module of ``src/ternmq`` takes a place in ``LAYERS``."""
    names = {module.split(".")[1] for module in _source_modules() if "." in module}
    assert names <= set(LAYERS), f"give these a layer in LAYERS: {sorted(names - set(LAYERS))}"


def test_imports_point_downwards() -> None:
    """ARCHITECTURE: message/ selector/ protocol/ (pure) < store/ < broker/ < transport/,
    server/ < client/ < spark/ < cli; counting imports inside functions and under
    ``TYPE_CHECKING``. Only ``cli`` imports the ``ternmq`` package itself."""
    edges = _import_edges(_source_modules())
    wrong = []
    for module, targets in sorted(edges.items()):
        package, layer = _layer(module)
        for target, lines in sorted(targets.items()):
            target_package, target_layer = _layer(target)
            upward = target_layer > layer or (target_layer == layer and target_package != package)
            if upward and not (module == "ternmq.cli" and target == "ternmq"):
                where = ", ".join(str(line) for line in sorted(set(lines)))
                wrong.append(f"{module} -> {target}  (line {where})")
    assert not wrong, "imports that point up or sideways:\n" + "\n".join(wrong)


_STORE_OR_CLOCK = re.compile(r"(Store|Clock)$")


def _store_and_clock_classes(modules: dict[str, pathlib.Path]) -> set[str]:
    """Class names that are stores or clocks: named ``...Store``/``...Clock``, or deriving
    (directly or not) from such a class anywhere in the package."""
    bases: dict[str, set[str]] = {}
    for path in modules.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef):
                bases.setdefault(node.name, set()).update(
                    _last_name(base) for base in node.bases if _last_name(base)
                )
    names = {name for name in bases if _STORE_OR_CLOCK.search(name)}
    while True:
        more = {name for name, parents in bases.items() if parents & names} - names
        if not more:
            return names
        names |= more


def _last_name(node: ast.expr) -> str:
    """``SqliteStore`` -> itself; ``sqlite.SqliteStore`` -> ``SqliteStore``; else ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _flatten_classes(node: ast.expr) -> list[ast.expr]:
    """The classes of ``C``, ``(A, B)`` or ``A | B`` (nested either way)."""
    if isinstance(node, ast.Tuple):
        return [cls for element in node.elts for cls in _flatten_classes(element)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _flatten_classes(node.left) + _flatten_classes(node.right)
    return [node]


def _type_checks(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, class name) for each class named by ``isinstance``/``issubclass`` or a ``case
    C()`` pattern, with import aliases (``import X as Y``) resolved to the imported name."""
    aliases = {
        alias.asname: alias.name.rsplit(".", 1)[-1]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
        if alias.asname
    }
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        classes: list[ast.expr] = []
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
        ):
            classes = _flatten_classes(node.args[1])
        elif isinstance(node, ast.MatchClass):
            classes = [node.cls]
        for cls in classes:
            name = _last_name(cls)
            if name:
                found.append((node.lineno, aliases.get(name, name)))
    return found


def _type_check_allowed(module: str) -> bool:
    return module.startswith(("ternmq.store.", "ternmq.testing")) or module == "ternmq.store"


def test_type_check_walker() -> None:
    """The walker sees tuples, unions, attributes, aliases and ``case`` patterns."""
    tree = ast.parse(
        "from ternmq.store.sqlite import SqliteStore as S\n"
        "isinstance(a, (S, int))\n"
        "isinstance(b, x.FakeClock | None)\n"
        "match c:\n"
        "    case MemoryStore(): pass\n"
    )
    assert sorted(_type_checks(tree)) == [
        (2, "SqliteStore"),
        (2, "int"),
        (3, "FakeClock"),
        (5, "MemoryStore"),
    ]
    assert {"SqliteStore", "MemoryStore", "Store", "FakeClock", "SystemClock", "Clock"} <= (
        _store_and_clock_classes(_source_modules())
    )


def test_no_store_or_clock_type_checks() -> None:
    """Issue 16: no host or gateway asks which store or clock it has (``isinstance`` and the
    like); what differs is a capability of the store or clock protocol. Only ``ternmq/store/``
    and ``ternmq.testing`` may name those classes in a type check."""
    modules = _source_modules()
    watched = _store_and_clock_classes(modules)
    offences = sorted(
        f"{path.relative_to(SRC.parent)}:{line}: type check against {name}"
        for module, path in modules.items()
        if not _type_check_allowed(module)
        for line, name in _type_checks(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        if name in watched
    )
    assert not offences, "store/clock type checks outside store/ and testing:\n" + "\n".join(
        offences
    )
