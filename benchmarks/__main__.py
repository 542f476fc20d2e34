"""Run every benchmark: ``make bench`` (or ``.venv/bin/python -m benchmarks``)."""

from __future__ import annotations

import importlib
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent


def main() -> None:
    """Import each ``bench_*.py`` here and call its ``main()`` in turn."""
    sys.path.insert(0, str(HERE))
    for path in sorted(HERE.glob("bench_*.py")):
        print(f"== {path.stem}")
        module = importlib.import_module(path.stem)
        if "argv" in module.main.__code__.co_varnames:
            module.main([])
        else:
            module.main()
        print()


if __name__ == "__main__":
    main()
