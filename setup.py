"""Build script: pure Python by default; ``TERNMQ_MYPYC=1`` compiles the hot modules.

Theory of operation: pyproject.toml holds the package's metadata; this file only adds the
optional native part. When the build runs with ``TERNMQ_MYPYC=1`` (``TERNMQ_MYPYC=1 pip wheel
. -w build/``, or a non-editable ``pip install .``), the modules in ``COMPILED`` are compiled
with mypyc (shipped with mypy; a C compiler is all the build needs besides). The ``.py``
sources still ship beside the extensions, so ``TERNMQ_PURE_PYTHON=1`` at run time can import
them instead (``ternmq/_variant.py``). Without the variable nothing is compiled and mypy is
not needed: every editable install and the development tree stay pure Python.

The build frontend first asks for the build's requirements (setuptools' ``setup_requires``
answers that question), installs them, then builds: so mypy is requested only when asked for,
and mypyc is imported only once it is there.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import sys

from setuptools import setup

# The per-message modules, compiled together (one shared library); each passed the focused
# suite compiled (make test-compiled) and the conformance suite over tcp. Left out, by what
# stops them: the message classes (message/_message.py, _text.py, _bytes.py, _map.py,
# _stream.py, _object.py; they compile since each class copies its own fields, and with
# message/codec.py cut the CPU a message ~4 %, but a compiled method checks its arguments'
# annotated types first: a None property name raises TypeError where JMS says ValueError, a
# bool passes as an int, a wrong value for encode_message or set_object_property raises
# TypeError, not MessageFormatException: 37 of 635 tests of tests/message and tests/codec fail),
# msgspec Structs (a compiled Struct loses its class options: the codec's and the frames' live
# in message/_codec_types.py and protocol/_frame_types.py, interpreted), message/codec.py and
# protocol/frames.py (they compile and pass the focused suite and the conformance suite over
# tcp, but ran slower compiled: +1.1 us of CPU a message embedded, their feed and decode 5-10 %
# slower; their Python is mostly slot reads and writes on interpreted objects and calls into
# msgspec, which the specialising interpreter does at least as fast),
# protocol/native_connection.py (__slots__ in a subclass of an interpreted base),
# server/_gateway.py and broker/host.py (subclassed by interpreted classes), the client's
# public classes (applications and tests patch them: their per-message work is in
# client/_hot.py, client/_ledger.py and client/_send_window.py instead), broker/embedded.py
# (subclasses host.py).
# transport/tcp.py (tests patch methods of its socket wrappers; an attribute named
# ``_thread`` becomes a C field ``__thread``, a C keyword; its tests replace the module's
# ``SystemClock``, which a compiled caller binds at build time). See docs/performance.md.
COMPILED = [
    "src/ternmq/broker/engine.py",
    "src/ternmq/broker/_queue.py",
    "src/ternmq/broker/_dedup.py",
    "src/ternmq/broker/_gate.py",
    "src/ternmq/broker/_records.py",
    "src/ternmq/broker/clock.py",
    "src/ternmq/broker/_posting.py",
    "src/ternmq/client/_hot.py",
    "src/ternmq/client/_ledger.py",
    "src/ternmq/client/_route.py",
    "src/ternmq/client/_send_window.py",
    "src/ternmq/transport/vm.py",
]
MYPY = "mypy>=1.10"

# setuptools reuses build/lib* between builds of the same tree: an extension left there by an
# earlier compiled build would ship in the next (even a pure) wheel. Every build starts clean.
if "egg_info" not in sys.argv:
    for stale in [*pathlib.Path("build").glob("lib*"), *pathlib.Path("build").glob("temp*")]:
        shutil.rmtree(stale, ignore_errors=True)

# An editable install is never compiled, whatever the variable says: an extension beside its .py
# in the working tree would shadow the source being edited.
EDITABLE = any(cmd in sys.argv for cmd in ("editable_wheel", "develop"))

if os.environ.get("TERNMQ_MYPYC", "") not in ("", "0") and not EDITABLE:
    try:
        from mypyc.build import mypycify
    except ImportError:
        if "egg_info" not in sys.argv:  # a build, not the frontend's question: no silent pure
            sys.exit(f"TERNMQ_MYPYC=1 needs mypyc: pip install '{MYPY}' (or build isolated)")
        setup(setup_requires=[MYPY])  # the frontend's first pass: ask for mypy
    else:
        setup(
            setup_requires=[MYPY],
            ext_modules=mypycify(COMPILED, opt_level=os.environ.get("TERNMQ_MYPYC_OPT", "3")),
        )
else:
    setup()
