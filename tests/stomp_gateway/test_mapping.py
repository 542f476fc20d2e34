"""``server/_stomp_mapping.py`` without a server: a SEND's headers straight to the stored
form (what ``encode_message`` would write for the same message), and MESSAGE frames built
from the stored form in parts, the message's part kept for the next subscriber."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ternmq import BytesMessage, TextMessage
from ternmq.destination import Destination, destination
from ternmq.errors import InvalidDestinationException, MessageFormatException
from ternmq.message.codec import CodecLimitError, CodecLimits, decode_message, encode_message
from ternmq.protocol.stomp import (
    StompError,
    StompFrame,
    StompLimits,
    StompParser,
    encode_headers,
    escape_header,
)
from ternmq.server._stomp_mapping import (
    MessageFrames,
    _header_lines,
    delivery_head,
    encode_send,
    jms_destination,
    subscription_head,
)

NOW = 1_700_000_000_000


def resolve(text: str) -> Destination:
    return destination(jms_destination(text))


def send(headers: list[tuple[str, str]], body: bytes = b"hello", **kw: Any) -> bytes:
    req = encode_send(
        headers, body, corr=1, session_id=1, now_ms=NOW, message_id="ID:m-1", resolve=resolve, **kw
    )
    return req.message


def test_send_headers_become_the_stored_form() -> None:
    req = encode_send(
        [
            ("destination", "/queue/orders"),
            ("persistent", "true"),
            ("priority", "7"),
            ("expires", str(NOW + 5000)),
            ("AMQ_SCHEDULED_DELAY", "250"),
            ("correlation-id", "c-9"),
            ("type", "order"),
            ("reply-to", "/topic/replies"),
            ("JMSXGroupID", "g1"),
            ("JMSXGroupSeq", "3"),
            ("custom", "a:b"),
            ("custom", "second: ignored"),
            ("content-type", "text/plain;charset=latin-1"),
        ],
        "café".encode("latin-1"),
        corr=5,
        session_id=3,
        now_ms=NOW,
        message_id="ID:m-1",
        resolve=resolve,
    )
    assert (req.corr, req.session_id, req.destination) == (5, 3, "queue://orders")
    assert (req.persistent, req.priority, req.expiration) == (True, 7, NOW + 5000)
    assert (req.delivery_time, req.group_id, req.group_seq) == (NOW + 250, "g1", 3)
    msg = decode_message(req.message)
    assert isinstance(msg, TextMessage)
    assert msg.text == "café"
    assert msg.jms_message_id == "ID:m-1"
    assert msg.jms_timestamp == NOW
    assert msg.jms_delivery_mode == 2
    assert msg.jms_correlation_id == "c-9"
    assert msg.jms_type == "order"
    assert msg.jms_reply_to == destination("topic://replies")
    assert msg.get_string_property("custom") == "a:b"
    assert msg.get_int_property("JMSXGroupSeq") == 3
    assert set(msg.get_property_names()) == {"JMSXGroupID", "JMSXGroupSeq", "custom"}
    # The octets are the codec's own for that message.
    assert encode_message(msg) == req.message


def test_send_defaults_and_bytes_body() -> None:
    data = send([("destination", "/queue/a"), ("content-length", "3")], b"\x00\x01\x02")
    msg = decode_message(data)
    assert isinstance(msg, BytesMessage)
    assert msg.read_bytes(10) == b"\x00\x01\x02"
    assert (msg.jms_delivery_mode, msg.jms_priority, msg.jms_expiration) == (1, 4, 0)
    assert msg.jms_delivery_time == NOW
    assert encode_message(decode_message(data)) == data
    durable = decode_message(send([("destination", "/queue/a")], persistent_default=True))
    assert durable.jms_delivery_mode == 2


@pytest.mark.parametrize(
    ("headers", "error", "words"),
    [
        ([("priority", "1")], InvalidDestinationException, "needs a destination"),
        ([("destination", "/bad/a")], InvalidDestinationException, "/queue/NAME"),
        ([("destination", "/queue/a"), ("priority", "10")], MessageFormatException, "0..9"),
        ([("destination", "/queue/a"), ("expires", "-1")], MessageFormatException, "expires"),
        ([("destination", "/queue/a"), ("JMSXGroupSeq", "x")], MessageFormatException, "JMSX"),
        (
            [("destination", "/queue/a"), ("JMSXRcvTimestamp", "1")],
            MessageFormatException,
            "leave it out",
        ),
        (
            [("destination", "/queue/a"), ("content-type", "text/plain;charset=ascii")],
            MessageFormatException,
            "not text in ascii",
        ),
    ],
)
def test_send_refusals(headers: list[tuple[str, str]], error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        send(headers, "é".encode())


def test_send_past_the_codec_limits() -> None:
    small = CodecLimits(max_body_size=4, max_properties=1)
    with pytest.raises(CodecLimitError, match="max_body_size"):
        send([("destination", "/queue/a")], b"hello", limits=small)
    with pytest.raises(CodecLimitError, match="max_properties"):
        send([("destination", "/queue/a"), ("a", "1"), ("b", "2")], b"hi", limits=small)


def parse(data: bytes, version: str) -> StompFrame:
    parser = StompParser(StompLimits())
    parser.version = version
    parser.frame_limit = 1 << 24
    (frame,) = parser.feed(data)
    assert isinstance(frame, StompFrame)
    return frame


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_message_frame_from_parts(version: str) -> None:
    data = send([("destination", "/topic/t"), ("custom", "x"), ("type", "t")])
    frames = MessageFrames()
    parts = frames.parts(data, version)
    assert frames.parts(data, version) is parts  # the next subscriber reuses them
    assert frames.message_id == "ID:m-1"
    head = subscription_head("sub:1", version)
    first = parse(delivery_head(head, None, 1) + b"".join(parts), version)
    assert first.command == "MESSAGE"
    assert first.body == b"hello"
    expected = {
        "subscription": "sub:1",
        "redelivered": "false",
        "JMSXDeliveryCount": "1",
        "message-id": "ID:m-1",
        "destination": "/topic/t",
        "persistent": "false",
        "priority": "4",
        "expires": "0",
        "timestamp": str(NOW),
        "type": "t",
        "custom": "x",
        "content-type": "text/plain;charset=utf-8",
        "content-length": "5",
    }
    assert dict(first.headers) == expected
    again = parse(delivery_head(head, "42", 3) + b"".join(parts), version)
    assert dict(again.headers) == {
        **expected,
        "ack": "42",
        "redelivered": "true",
        "JMSXDeliveryCount": "3",
    }
    # Another version is built anew (escaping differs), another message too.
    other = "1.2" if version != "1.2" else "1.1"
    assert frames.parts(data, other) is not parts
    data2 = send([("destination", "/topic/t")], b"two")
    assert parse(head + b"".join(frames.parts(data2, version)), version).body == b"two"


def test_large_body_is_a_part_of_its_own() -> None:
    body = bytes(range(256)) * 1024
    data = send([("destination", "/queue/big"), ("content-length", str(len(body)))], body)
    parts = MessageFrames().parts(data, "1.2")
    assert len(parts) == 3
    assert parts[1] == body
    # not a copy: a view of the stored octets (the socket's writelines takes it as it is)
    assert isinstance(parts[1], memoryview) and parts[1].obj is data
    frame = parse(subscription_head("s", "1.2") + b"".join(parts), "1.2")
    assert frame.body == body


def test_kept_parts_are_bounded_and_reused() -> None:
    frames = MessageFrames(budget=4000)
    datas = [send([("destination", "/topic/t"), ("n", str(i))]) for i in range(20)]
    first = [frames.parts(d, "1.2") for d in datas[:3]]
    # A later subscriber of the same messages (the same stored object) reuses them; equal
    # octets in another object are built again, to the same octets.
    assert all(frames.parts(d, "1.2") is p for d, p in zip(datas[:3], first, strict=True))
    copies = [frames.parts(bytes(bytearray(d)), "1.2") for d in datas[:3]]
    assert copies == first and all(c is not p for c, p in zip(copies, first, strict=True))
    for d in datas:
        frames.parts(d, "1.2")
    assert frames._held <= 4000
    kept = [entry[0] for entry in frames._kept.values()]
    assert all(d is not datas[0] for d in kept)  # the oldest went first
    assert any(d is datas[-1] for d in kept)


def test_first_of_a_repeated_header_wins_in_wire_order() -> None:
    msg = decode_message(
        send([("destination", "/queue/a"), ("b", "1"), ("a", "2"), ("b", "3"), ("priority", "1")])
    )
    assert msg.get_string_property("b") == "1"
    assert msg.jms_priority == 1
    assert list(msg._properties) == ["b", "a"]


_TEXT = st.text(alphabet=st.sampled_from("ab:\\\n\r é\x00"), max_size=5)


@given(_TEXT, st.lists(st.tuples(_TEXT.filter(bool), _TEXT), max_size=4))
def test_header_lines_are_the_escaped_headers(mid: str, rest: list[tuple[str, str]]) -> None:
    """The one-pass header block of a MESSAGE is what escaping each header gives (or the
    same refusal), in every version."""
    headers = [("message-id", "ID:" + mid), *rest]
    for version in ("1.1", "1.2"):
        try:
            expected: bytes | str = (
                f"message-id:{escape_header(headers[0][1], version)}\n".encode()
                + encode_headers(headers[1:], version)
            )
        except StompError as exc:
            expected = str(exc)
        try:
            got: bytes | str = _header_lines(headers, version)
        except StompError as exc:
            got = str(exc)
        assert got == expected


def test_parts_not_kept_for_a_queue() -> None:
    """A queue's message (keep=False) is built each time and not kept: nobody else gets it."""
    frames = MessageFrames()
    data = send([("destination", "/queue/q")])
    parts = frames.parts(data, "1.2", keep=False)
    assert frames.message_id == "ID:m-1"
    assert frames._held == 0 and not frames._kept
    again = frames.parts(data, "1.2", keep=False)
    assert again == parts and again is not parts
    assert frames.parts(data, "1.2") == parts  # the same octets either way
