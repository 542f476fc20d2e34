"""The ``ternmq`` command line."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ternmq`` console script."""
    args = sys.argv[1:] if argv is None else argv
    print("ternmq: usage: ternmq demo", file=sys.stderr)
    return 2 if args else 0


if __name__ == "__main__":
    sys.exit(main())
