"""A memory store that answers as a disk store does, for engine tests: a batch handed over
(``submit``) is durable only when the test says so (:meth:`LaterStore.commit`), so the
output that waits for it can be looked at before and after; and the sends such tests make
(:func:`text_send`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ternmq.message import TextMessage
from ternmq.message.codec import encode_message
from ternmq.protocol import commands as c
from ternmq.store import MemoryStore, Op

__all__ = ["LaterStore", "text_send"]


def text_send(corr: int, n: int, dest: str, *, persistent: bool = True, **kw: object) -> c.Send:
    """A ``Send`` of session 1 to ``dest``: the text message ``m{n}``, PERSISTENT unless
    said otherwise, with the other fields of ``Send`` in ``kw``."""
    return c.Send(
        corr=corr,
        session_id=1,
        destination=dest,
        message=encode_message(TextMessage(f"m{n}")),
        persistent=persistent,
        **kw,  # type: ignore[arg-type]
    )


class LaterStore(MemoryStore):
    """Batches are applied at once but reported durable only by :meth:`commit`; every batch
    handed over is kept in ``handed``."""

    synchronous = False

    def __init__(self) -> None:
        super().__init__()
        self.handed: list[list[Op]] = []
        self.tokens: list[int] = []
        self.report: Callable[[list[int], BaseException | None], None] | None = None

    def submit(self, ops: Sequence[Op], token: int) -> None:
        """Keep the batch (written at once) and its token until :meth:`commit`."""
        self.handed.append(list(ops))
        self.write(ops)
        self.tokens.append(token)

    def set_completion(self, callback: Callable[[list[int], BaseException | None], None]) -> None:
        """Where :meth:`commit` reports."""
        self.report = callback

    def commit(self) -> None:
        """Report every batch kept so far as durable."""
        tokens, self.tokens = self.tokens, []
        assert self.report is not None
        self.report(tokens, None)

    def kinds(self) -> list[list[str]]:
        """The operations of every batch handed over so far, by type name."""
        return [[type(op).__name__ for op in ops] for ops in self.handed]
