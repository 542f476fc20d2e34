"""Benchmark of the message codec (``ternmq.message.codec``).

Measures encode, decode and encode+decode round trips per second of a TextMessage with a
256-character body and 5 typed properties (String, int, long, double, boolean) and all the
usual headers set, decoded into a full ``TextMessage``, then encode and decode of the same
message without properties (the common case); and, for comparison, bare msgspec
(msgpack) on an array-like Struct with the same fields; and the frame decoder, 32 ``Send``
frames per ``feed``, against msgspec decoding their payloads from a list. Each figure is the
median of several runs timed with ``time.perf_counter``; the two are measured alternately so
that a change in machine load affects both. The first line says which variant ran (pure
Python, or the modules a ``TERNMQ_MYPYC=1`` build compiled). Runs in well under a minute::

    .venv/bin/python benchmarks/bench_codec.py
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import msgspec

from _common import variant
from ternmq.destination import Queue, TemporaryQueue
from ternmq.message import TextMessage
from ternmq.message.codec import decode_message, encode_message
from ternmq.protocol import commands as c
from ternmq.protocol.frames import FrameDecoder, WireCommand, encode

RUNS = 7
TARGET_SECONDS = 0.25  # per run and per measured operation


def make_message(properties: bool = True) -> TextMessage:
    """The benchmark message: 256-character text, 5 typed properties (none when
    ``properties`` is false, as most messages), headers set."""
    msg = TextMessage("m" * 256)
    msg.jms_message_id = "ID:7c1e5a2f-0b44-4d2e-9a51-3f2f0c8e1d77:1:1:1:42"
    msg.jms_timestamp = 1_700_000_000_123
    msg.jms_correlation_id = "order-2024-000042"
    msg.jms_reply_to = TemporaryQueue("ID:7c1e5a2f-reply-1")
    msg.jms_destination = Queue("orders.incoming")
    msg.jms_expiration = 1_700_000_060_123
    msg.jms_delivery_time = 1_700_000_000_123
    msg.jms_type = "OrderCreated"
    if not properties:
        return msg
    msg.set_string_property("JMSXGroupID", "customer-1337")
    msg.set_int_property("orderLines", 12)
    msg.set_long_property("customerNo", 4_294_967_296_123)
    msg.set_double_property("amount", 1234.56)
    msg.set_boolean_property("express", True)
    return msg


class BareMessage(msgspec.Struct, array_like=True):
    """The same fields as the codec's array, decoded by msgspec alone."""

    message_id: str | None
    timestamp: int
    correlation_id: str | None
    correlation_id_bytes: bytes | None
    reply_to: str | None
    destination: str | None
    delivery_mode: int
    redelivered: bool
    type: str | None
    expiration: int
    delivery_time: int
    priority: int
    properties: dict[str, bool | int | float | str | None]
    property_tags: bytes
    body: str | None


def make_bare(msg: TextMessage) -> BareMessage:
    """A BareMessage holding what ``msg`` holds."""
    return BareMessage(
        msg.jms_message_id,
        msg.jms_timestamp,
        msg.jms_correlation_id,
        None,
        str(msg.jms_reply_to),
        str(msg.jms_destination),
        msg.jms_delivery_mode,
        msg.jms_redelivered,
        msg.jms_type,
        msg.jms_expiration,
        msg.jms_delivery_time,
        msg.jms_priority,
        dict(msg._properties),
        bytes(msg._property_types.values()),
        msg.text,
    )


def rate(func: Callable[[], object], loops: int) -> float:
    """Calls of ``func`` per second over ``loops`` calls."""
    start = time.perf_counter()
    for _ in range(loops):
        func()
    return loops / (time.perf_counter() - start)


def calibrate(func: Callable[[], object]) -> int:
    """A loop count that takes about TARGET_SECONDS."""
    loops = 1000
    while True:
        start = time.perf_counter()
        for _ in range(loops):
            func()
        elapsed = time.perf_counter() - start
        if elapsed >= 0.05:
            return max(1000, int(loops * TARGET_SECONDS / elapsed))
        loops *= 4


def main() -> int:
    """Run the benchmark and print the medians and the codec/msgspec ratio."""
    msg = make_message()
    data = encode_message(msg)
    back = decode_message(data)
    assert isinstance(back, TextMessage) and back.text == msg.text
    assert back._properties == msg._properties and back._property_types == msg._property_types

    bare = make_bare(msg)
    encoder = msgspec.msgpack.Encoder()
    decoder = msgspec.msgpack.Decoder(BareMessage)
    bare_data = encoder.encode(bare)
    assert decoder.decode(bare_data) == bare
    plain = make_message(properties=False)
    plain_data = encode_message(plain)
    bare_plain = make_bare(plain)
    bare_plain_data = encoder.encode(bare_plain)

    cases: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
        "encode": (lambda: encode_message(msg), lambda: encoder.encode(bare)),
        "decode": (lambda: decode_message(data), lambda: decoder.decode(bare_data)),
        "round trip": (
            lambda: decode_message(encode_message(msg)),
            lambda: decoder.decode(encoder.encode(bare)),
        ),
        "encode, no properties": (
            lambda: encode_message(plain),
            lambda: encoder.encode(bare_plain),
        ),
        "decode, no properties": (
            lambda: decode_message(plain_data),
            lambda: decoder.decode(bare_plain_data),
        ),
    }
    print(variant())
    print(f"TextMessage, 256-character body, 5 typed properties: {len(data)} octets encoded")
    print(f"(bare msgspec Struct: {len(bare_data)} octets); median of {RUNS} runs")
    print(f"{'':27} {'ternmq codec':>14} {'bare msgspec':>14} {'ratio':>7}")
    for name, (ours, theirs) in cases.items():
        ours_loops, theirs_loops = calibrate(ours), calibrate(theirs)
        ours_rates: list[float] = []
        theirs_rates: list[float] = []
        for _ in range(RUNS):
            ours_rates.append(rate(ours, ours_loops))
            theirs_rates.append(rate(theirs, theirs_loops))
        a, b = statistics.median(ours_rates), statistics.median(theirs_rates)
        print(f"{name + '/s':27} {a:14,.0f} {b:14,.0f} {a / b:7.2f}")
    frames()
    return 0


def frames() -> None:
    """The wire: ``FrameDecoder.feed`` of 32 ``Send`` frames (300-byte messages) per call, as
    one ``recv`` brings them, against msgspec decoding the same 32 payloads from a list."""
    frame = encode(
        c.Send(
            corr=0,
            session_id=1,
            destination="queue://orders.incoming",
            message=b"m" * 300,
            persistent=False,
            priority=4,
            expiration=0,
            delivery_time=0,
        )
    )
    chunk = frame * 32
    payloads = [frame[4:]] * 32
    feeder = FrameDecoder()
    bare = msgspec.msgpack.Decoder(WireCommand)
    assert len(feeder.feed(chunk)) == 32

    def ours() -> object:
        return feeder.feed(chunk)

    def theirs() -> object:
        return [bare.decode(p) for p in payloads]

    ours_loops, theirs_loops = calibrate(ours), calibrate(theirs)
    ours_rates: list[float] = []
    theirs_rates: list[float] = []
    for _ in range(RUNS):
        ours_rates.append(rate(ours, ours_loops) * 32)
        theirs_rates.append(rate(theirs, theirs_loops) * 32)
    a, b = statistics.median(ours_rates), statistics.median(theirs_rates)
    print(f"{'frames/s':27} {a:14,.0f} {b:14,.0f} {a / b:7.2f}  (Send frames, 32 per feed)")


if __name__ == "__main__":
    sys.exit(main())
