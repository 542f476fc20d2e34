"""Property-based tests of the STOMP codec and connection: whatever the octets, only a
StompError escapes; encoded frames parse back to themselves in every version; how the stream
is cut into reads does not change what is parsed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ternmq.protocol.stomp import (
    COMMANDS,
    HEARTBEAT,
    StompError,
    StompFrame,
    StompLimits,
    StompParser,
    encode_frame,
)
from ternmq.protocol.stomp_connection import ProtocolViolation, State, StompServerConnection

BIG = StompLimits(max_frame=1 << 20, max_headers=64, max_header_length=8192, max_body=1 << 19)
SMALL = StompLimits(
    max_frame=400, max_headers=4, max_header_length=60, max_body=200, max_handshake_frame=120
)
_RAW = ("CONNECT", "STOMP", "CONNECTED")


def _fits(version: str, command: str, name: str, value: str) -> bool:
    """Whether encode_frame can carry this header in ``version`` (1.0 and CONNECT-like
    frames are not escaped; 1.1 cannot escape a trailing CR)."""
    if version == "1.0" or command in _RAW:
        return not (
            "\n" in name + value or ":" in name or name.endswith("\r") or value.endswith("\r")
        )
    if version == "1.1":
        return not (name.endswith("\r") or value.endswith("\r"))
    return True


text = st.text(max_size=30)
# content-length is the codec's own business (encode_frame adds it for a body).
headers_st = st.lists(
    st.tuples(text, text).filter(lambda kv: kv[0] != "content-length"), max_size=10
)


def parser_for(version: str, limits: StompLimits = BIG) -> StompParser:
    """A parser of ``version`` past the handshake."""
    parser = StompParser(limits)
    parser.version = version
    parser.frame_limit = limits.max_frame
    return parser


@settings(max_examples=400, deadline=None)
@given(
    version=st.sampled_from(["1.0", "1.1", "1.2"]),
    command=st.sampled_from(sorted(COMMANDS)),
    headers=headers_st,
    body=st.binary(max_size=300),
)
def test_encode_parse_round_trip(
    version: str, command: str, headers: list[tuple[str, str]], body: bytes
) -> None:
    """Any headers a version can carry and any body come back as sent (content-length is
    added for a non-empty body)."""
    headers = [(k, v) for k, v in headers if _fits(version, command, k, v)]
    data = encode_frame(command, headers, body, version)
    (got,) = parser_for(version).feed(data)
    assert isinstance(got, StompFrame)
    expected = headers + ([("content-length", str(len(body)))] if body else [])
    assert got == StompFrame(command, expected, body)


@settings(max_examples=300, deadline=None)
@given(version=st.sampled_from(["1.0", "1.1", "1.2"]), data=st.binary(max_size=600))
def test_arbitrary_bytes_raise_only_stomp_errors(version: str, data: bytes) -> None:
    """Random octets: frames, or a StompError with a message; never another exception."""
    for limits in (BIG, SMALL):
        try:
            parser_for(version, limits).feed(data)
        except StompError as exc:
            assert isinstance(exc.args[0], str) and exc.args[0]


@st.composite
def mutated_frames(draw: st.DrawFn) -> bytes:
    """A valid frame stream with a few octets replaced, inserted or removed."""
    frames = draw(
        st.lists(
            st.builds(
                lambda c, h, b: encode_frame(c, h, b, "1.2"),
                st.sampled_from(sorted(COMMANDS - set(_RAW))),
                headers_st,
                st.binary(max_size=50),
            ),
            min_size=1,
            max_size=4,
        )
    )
    data = bytearray(b"\n".join(frames))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["set", "insert", "delete"]))
        octet = draw(st.sampled_from([0, 10, 13, 58, 92, 0xFF, 0x41]))
        if kind == "insert" or at == len(data):
            data.insert(at, octet)
        elif kind == "set":
            data[at] = octet
        else:
            del data[at]
    return bytes(data)


@settings(max_examples=300, deadline=None)
@given(data=mutated_frames(), version=st.sampled_from(["1.0", "1.1", "1.2"]))
def test_mutated_frames_raise_only_stomp_errors(data: bytes, version: str) -> None:
    """Near-valid input explores the parser's error paths; still only StompError."""
    try:
        parser_for(version).feed(data)
    except StompError as exc:
        assert exc.args[0]


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, int]:
    """Frames (with and without content-length, LF or CR LF) and heart-beats, concatenated,
    and how many frames that is."""
    parts = []
    frames = 0
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            parts.append(draw(st.sampled_from([b"\n", b"\r\n"])))
            continue
        command = draw(st.sampled_from(sorted(COMMANDS - set(_RAW))))
        headers = draw(headers_st)
        frames += 1
        if draw(st.booleans()):
            raw = encode_frame(command, headers, draw(st.binary(max_size=80)))
        else:
            body = draw(st.binary(max_size=80)).replace(b"\x00", b"")
            raw = encode_frame(command, headers, body, content_length=False)
        if draw(st.booleans()):  # CR LF line ends (1.2): header values hold no raw LF
            head, _, rest = raw.partition(b"\n\n")
            raw = head.replace(b"\n", b"\r\n") + b"\r\n\r\n" + rest
        parts.append(raw)
    return b"".join(parts), frames


@settings(max_examples=300, deadline=None)
@given(stream=streams(), cuts=st.lists(st.integers(0, 2000), max_size=12))
def test_any_chunking_gives_the_same_frames(stream: tuple[bytes, int], cuts: list[int]) -> None:
    """The same stream cut at arbitrary points, or into single octets, yields the same
    frames and heart-beats."""
    data, frames = stream
    whole = parser_for("1.2").feed(data)
    assert sum(x is not HEARTBEAT for x in whole) == frames
    parser = parser_for("1.2")
    got: list[object] = []
    prev = 0
    for cut in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:
        got += parser.feed(data[prev:cut])
        assert parser.pending <= cut
        prev = cut
    assert got == whole
    assert parser.pending == 0
    # One octet per read: every boundary is a cut (a separator straddling two reads).
    parser = parser_for("1.2")
    single: list[object] = []
    for i in range(len(data)):
        single += parser.feed(data[i : i + 1])
    assert single == whole


@settings(max_examples=200, deadline=None)
@given(
    state=st.sampled_from([State.CONNECT, State.AUTH, State.OPEN]),
    chunks=st.lists(st.binary(max_size=200), max_size=5),
)
def test_connection_garbage_raises_only_protocol_violations(
    state: State, chunks: list[bytes]
) -> None:
    """Random octets into a connection in any live state: events, or a ProtocolViolation."""
    conn = StompServerConnection(0.0, limits=SMALL)
    if state is not State.CONNECT:
        conn.receive_data(b"CONNECT\naccept-version:1.2\n\n\x00", 0.0)
        if state is State.OPEN:
            conn.accept()
    try:
        for i, chunk in enumerate(chunks):
            conn.receive_data(chunk, float(i))
    except ProtocolViolation as exc:
        assert exc.args[0]
