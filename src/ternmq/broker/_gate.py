"""The ordered output gate: what the engine says leaves in the order it said it, and only
once the store batch it depends on is durable.

Theory of operation
-------------------
Every request the engine handles produces a store batch (possibly empty) and output (replies,
deliveries, events). With a synchronous store the batch is written at once and the output
leaves at once. With an asynchronous store (the writer thread's group commit) the output
waits in :attr:`OutputGate.pending` as one *group*::

    [token, done, error, [(conn, command), ...], [entries to page out], [entries made durable],
     [entries removed]]

behind every earlier group: a group without a batch of its own (token 0, done at once) still
waits behind the groups before it, so every connection sees events and replies in the order
the engine produced them (the guarantee JMS 2.0 §4.4.13 needs: a send's receipt means the
message is durable, and nothing delivered after it overtakes it).

The store reports each group commit from its thread; the engine brings the report into its
owner context and calls :meth:`OutputGate.mark` with the reports queued so far, then
:meth:`OutputGate.release`, which emits the done groups at the head of the queue. For a group
whose batch succeeded, the bytes of messages paged out by it leave memory now (PSF-07). For a
failed one the engine's ``take_back`` callback removes the messages the batch was to make
durable, puts back those it was to remove (an acknowledgement that is not durable is not
done: the message is delivered again, marked redelivered), and turns its replies into errors
(:func:`fail_replies`); deliveries of the removed messages still waiting in later groups are
dropped (:meth:`OutputGate.drop_deliveries`).

The per-request part (building a group, submitting the batch) stays in the engine's
``_flush``, which holds :attr:`~OutputGate.pending` and :attr:`~OutputGate.tokens` itself: the
gate adds no call to the path of a message.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable
from typing import Any

from ternmq.broker._queue import GONE, Entry
from ternmq.broker._records import BrokerConnection
from ternmq.protocol import commands as c

__all__ = ["OutputGate", "Output", "fail_replies", "without_deliveries"]

#: Output of one request: (connection, command), in the order the engine produced it.
Output = list[tuple[BrokerConnection, c.Command]]
#: The engine's handling of a failed batch: (its durable entries, its removed entries, the
#: error, its output) -> the output to emit instead.
TakeBack = Callable[[list[Entry], list[Entry], BaseException, Output], Output]


class OutputGate:
    """Output groups waiting for their store batches, released in order.

    Args:
        take_back: called for a group whose batch failed (see the module's docstring).
    """

    # No __slots__: mypyc (release builds, setup.py) compiles this class, and a compiled
    # class has fixed attributes already; one gate a connection, so pure Python loses little.

    def __init__(self, take_back: TakeBack) -> None:
        self.pending: collections.deque[list[Any]] = collections.deque()
        self.tokens = itertools.count(1)  # batch tokens, increasing; 0 = no batch
        self._take_back = take_back

    def mark(self, completed: collections.deque[tuple[list[int], BaseException | None]]) -> None:
        """Mark the groups of every report in ``completed`` (emptied) done, with its error."""
        # One pass over the pending output for every report queued so far: tokens are
        # increasing in both (batches are reported in submission order), and most reports
        # complete the oldest groups, so the pass usually stops after the report's groups.
        results: dict[int, BaseException | None] = {}
        while completed:
            tokens, error = completed.popleft()
            for token in tokens:
                results[token] = error
        left = len(results)
        if not left:
            return
        for group in self.pending:
            token = group[0]
            if token in results:
                group[1] = True
                group[2] = results[token]
                left -= 1
                if not left:
                    break

    def mark_all(self) -> None:
        """Mark every group done (the store was closed: it wrote what was queued)."""
        for group in self.pending:
            group[1] = True

    def release(self) -> bool:
        """Emit the done groups at the head of the queue, in order; True if a failed batch
        was taken back (the engine then flushes what that changed)."""
        pending = self.pending
        took_back = False
        while pending and pending[0][1]:
            _, _, error, out, to_page, unstored, removed = pending.popleft()
            if error is None:
                for e in to_page:  # durable now: drop the bytes from memory (PSF-07)
                    e.stored.page_out()
                    if e.state != GONE:
                        e.queue.paged += 1
            else:
                out = self._take_back(unstored, removed, error, out)
                took_back = True
            for conn, cmd in out:
                conn.emit(cmd)
        return took_back

    def drop_deliveries(self, dropped: set[tuple[int, int]]) -> None:
        """Remove the ``Deliver`` commands of ``dropped`` (connection id, delivery id) from
        every waiting group."""
        for group in self.pending:
            group[3] = without_deliveries(group[3], dropped)


def without_deliveries(out: Output, dropped: set[tuple[int, int]]) -> Output:
    """``out`` without the ``Deliver`` commands of ``dropped`` (connection id, delivery id)."""
    return [
        (conn, cmd)
        for conn, cmd in out
        if not (type(cmd) is c.Deliver and (id(conn), cmd.delivery_id) in dropped)
    ]


def fail_replies(out: Output, error: BaseException) -> Output:
    """Turn the replies of a batch that could not be stored into errors."""
    text = f"store failure: the broker could not make this durable: {error}"
    return [
        (conn, c.Error(corr=cmd.corr, kind="JMSException", message=text))
        if isinstance(cmd, (c.Ok, c.Released)) and cmd.corr
        else (conn, cmd)
        for conn, cmd in out
    ]
