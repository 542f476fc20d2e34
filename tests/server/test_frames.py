"""Fuzzing the native frame codec (STYLE rule 10): for random and mutated byte streams,
``FrameDecoder.feed`` either returns commands or raises ``ProtocolError`` — nothing else
escapes — and valid streams decode the same however they are split."""

from __future__ import annotations

import struct
from typing import Any, get_args

from hypothesis import given, settings
from hypothesis import strategies as st

from ternmq.protocol import commands as c
from ternmq.protocol.frames import FrameDecoder, Heartbeat, ProtocolError, WireCommand, encode

MAX_FRAME = 4096

_small_int = st.integers(min_value=-(2**63), max_value=2**64 - 1)
_text = st.text(max_size=40)
_opt_text = st.none() | _text
_ids = st.lists(st.integers(min_value=0, max_value=2**32), max_size=5)

COMMANDS: st.SearchStrategy[WireCommand] = st.one_of(
    st.builds(c.Connect, corr=_small_int, user=_opt_text, password=_opt_text, client_id=_opt_text),
    st.builds(c.CreateSession, corr=_small_int, session_id=_small_int, transacted=st.booleans()),
    st.builds(
        c.Send,
        corr=_small_int,
        session_id=_small_int,
        destination=_text,
        message=st.binary(max_size=200),
        persistent=st.booleans(),
        priority=_small_int,
        expiration=_small_int,
        delivery_time=_small_int,
        group_id=_opt_text,
        group_seq=_small_int,
    ),
    st.builds(
        c.CreateConsumer,
        corr=_small_int,
        session_id=_small_int,
        consumer_id=_small_int,
        destination=_text,
        selector=_opt_text,
        no_local=st.booleans(),
        kind=st.sampled_from(["none", "shared", "durable", "shared_durable"]),
        subscription=_opt_text,
        prefetch=_small_int,
        credit=st.none() | _small_int,
    ),
    st.builds(c.Ack, corr=_small_int, session_id=_small_int, delivery_ids=_ids),
    st.builds(c.Release, corr=_small_int, session_id=_small_int, delivered=_ids),
    st.builds(
        c.Browse,
        corr=_small_int,
        destination=_text,
        selector=_opt_text,
        after=st.none() | st.tuples(_small_int, _small_int),
        limit=_small_int,
    ),
    st.builds(c.Ok, corr=_small_int, value=_opt_text),
    st.builds(c.Error, corr=_small_int, kind=_text, message=_text),
    st.builds(
        c.Deliver,
        consumer_id=_small_int,
        delivery_id=_small_int,
        message=st.binary(max_size=100),
        delivery_count=_small_int,
        expiration=_small_int,
    ),
    st.builds(c.ConnectionFailed, message=_text),
    st.just(Heartbeat()),
    st.just(c.Disconnect(corr=3)),
)


def _feed_all(dec: FrameDecoder, chunks: list[bytes]) -> list[WireCommand]:
    out: list[WireCommand] = []
    for chunk in chunks:
        out.extend(dec.feed(chunk))
    return out


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(max(0, x), len(data)) for x in cuts})
    pieces, prev = [], 0
    for p in points:
        pieces.append(data[prev:p])
        prev = p
    pieces.append(data[prev:])
    return pieces


@settings(max_examples=300)
@given(st.lists(COMMANDS, max_size=8), st.lists(st.integers(0, 4000), max_size=10))
def test_valid_stream_round_trips_however_split(cmds: list[Any], cuts: list[int]) -> None:
    data = b"".join(encode(x) for x in cmds)
    dec = FrameDecoder(max_frame=1 << 20)
    assert _feed_all(dec, _split(data, cuts)) == cmds
    assert dec.buffered == 0


def _only_protocol_errors(chunks: list[bytes]) -> None:
    dec = FrameDecoder(max_frame=MAX_FRAME)
    try:
        for chunk in chunks:
            for cmd in dec.feed(chunk):
                assert isinstance(cmd, (*get_args(c.Command), Heartbeat))
    except ProtocolError:
        pass


@settings(max_examples=500)
@given(st.lists(st.binary(max_size=300), max_size=6))
def test_random_bytes_raise_only_protocol_error(chunks: list[bytes]) -> None:
    _only_protocol_errors(chunks)


@settings(max_examples=500)
@given(
    st.lists(COMMANDS, min_size=1, max_size=5),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8),
    st.lists(st.integers(0, 4000), max_size=6),
    st.integers(0, 3),
)
def test_mutated_frames_raise_only_protocol_error(
    cmds: list[Any], flips: list[tuple[int, int]], cuts: list[int], mode: int
) -> None:
    data = bytearray(b"".join(encode(x) for x in cmds))
    for pos, value in flips:
        data[pos % len(data)] = value
    if mode == 1:  # truncate
        del data[len(data) // 2 :]
    elif mode == 2:  # a frame body with a lying length prefix
        body = bytes(data[4:])
        data[:] = struct.pack(">I", len(body) + flips[0][1]) + body
    elif mode == 3:  # duplicate a slice
        data += data[: flips[0][0] % max(1, len(data))]
    _only_protocol_errors(_split(bytes(data), cuts))


@given(st.integers(MAX_FRAME + 1, 2**32 - 1))
def test_oversized_length_rejected_before_the_body_arrives(n: int) -> None:
    dec = FrameDecoder(max_frame=MAX_FRAME)
    try:
        dec.feed(struct.pack(">I", n))
    except ProtocolError as exc:
        assert "max_frame" in str(exc)
    else:
        raise AssertionError("an oversized length prefix was accepted")


def test_a_large_frame_leaves_no_large_buffer() -> None:
    """Item 1 of issue 17: once a frame that came in pieces is complete, the decoder keeps no
    buffer of its size (only the partial frame after it), and ``release`` drops even that."""
    import sys

    dec = FrameDecoder()
    send = c.Send(session_id=1, destination="queue://q", message=b"x" * 8_000_000)
    big = encode(send)
    small = encode(c.CreateSession(session_id=1))
    got: list[WireCommand] = []
    for i in range(0, len(big), 65536):
        got += dec.feed(big[i : i + 65536] if i + 65536 < len(big) else big[i:] + small[:3])
    assert got == [send]
    assert dec.buffered == 3
    assert sys.getsizeof(dec._buf) < 4096
    assert dec.feed(small[3:] + big[:1_000_000]) == [c.CreateSession(session_id=1)]
    assert dec.buffered == 1_000_000
    dec.release()
    assert dec.buffered == 0 and sys.getsizeof(dec._buf) < 4096
