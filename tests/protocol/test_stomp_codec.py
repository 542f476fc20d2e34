"""The STOMP codec on byte fixtures: the examples of the STOMP 1.0, 1.1 and 1.2 specifications,
escaping per version, CR LF, NUL in bodies with content-length, heart-beats, and each limit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ternmq.errors import JMSException
from ternmq.protocol.stomp import (
    COLLECT_MIN,
    COMMANDS,
    HEARTBEAT,
    StompError,
    StompFrame,
    StompLimits,
    StompParser,
    encode_frame,
    encode_headers,
)


def parse(data: bytes, version: str = "1.2", limits: StompLimits | None = None) -> list[object]:
    """Everything ``data`` holds, parsed by a fresh, accepted parser of ``version``."""
    limits = limits or StompLimits()
    parser = StompParser(limits)
    parser.version = version
    parser.frame_limit = limits.max_frame
    out: list[object] = list(parser.feed(data))
    assert parser.pending == 0
    return out


def one(data: bytes, version: str = "1.2") -> StompFrame:
    """The one frame ``data`` holds."""
    (frame,) = parse(data, version)
    assert isinstance(frame, StompFrame)
    return frame


def error_of(data: bytes, version: str = "1.2", limits: StompLimits | None = None) -> str:
    """The message of the StompError that ``data`` raises."""
    limits = limits or StompLimits()
    parser = StompParser(limits)
    parser.version = version
    parser.frame_limit = limits.max_frame
    with pytest.raises(StompError) as info:
        parser.feed(data)
    assert isinstance(info.value, JMSException)
    message = info.value.args[0]
    assert isinstance(message, str) and message
    return message


# ---- the specifications' examples ---------------------------------------------------------
SPEC_12 = [
    (
        b"CONNECT\naccept-version:1.2\nhost:stomp.github.org\n\n\x00",
        StompFrame("CONNECT", [("accept-version", "1.2"), ("host", "stomp.github.org")]),
    ),
    (
        b"STOMP\naccept-version:1.2\nhost:stomp.github.org\n\n\x00",
        StompFrame("STOMP", [("accept-version", "1.2"), ("host", "stomp.github.org")]),
    ),
    (b"CONNECTED\nversion:1.2\n\n\x00", StompFrame("CONNECTED", [("version", "1.2")])),
    (
        b"SEND\ndestination:/queue/a\ncontent-type:text/plain\n\nhello queue a\n\x00",
        StompFrame(
            "SEND",
            [("destination", "/queue/a"), ("content-type", "text/plain")],
            b"hello queue a\n",
        ),
    ),
    (
        b"SEND\ndestination:/queue/a\nreceipt:message-12345\n\nhello queue a\x00",
        StompFrame(
            "SEND", [("destination", "/queue/a"), ("receipt", "message-12345")], b"hello queue a"
        ),
    ),
    (
        b"SUBSCRIBE\nid:0\ndestination:/queue/foo\nack:client\n\n\x00",
        StompFrame("SUBSCRIBE", [("id", "0"), ("destination", "/queue/foo"), ("ack", "client")]),
    ),
    (b"UNSUBSCRIBE\nid:0\n\n\x00", StompFrame("UNSUBSCRIBE", [("id", "0")])),
    (
        b"ACK\nid:12345\ntransaction:tx1\n\n\x00",
        StompFrame("ACK", [("id", "12345"), ("transaction", "tx1")]),
    ),
    (
        b"NACK\nid:12345\ntransaction:tx1\n\n\x00",
        StompFrame("NACK", [("id", "12345"), ("transaction", "tx1")]),
    ),
    (b"BEGIN\ntransaction:tx1\n\n\x00", StompFrame("BEGIN", [("transaction", "tx1")])),
    (b"COMMIT\ntransaction:tx1\n\n\x00", StompFrame("COMMIT", [("transaction", "tx1")])),
    (b"ABORT\ntransaction:tx1\n\n\x00", StompFrame("ABORT", [("transaction", "tx1")])),
    (b"DISCONNECT\nreceipt:77\n\n\x00", StompFrame("DISCONNECT", [("receipt", "77")])),
    (b"RECEIPT\nreceipt-id:77\n\n\x00", StompFrame("RECEIPT", [("receipt-id", "77")])),
    (
        b"MESSAGE\nsubscription:0\nmessage-id:007\ndestination:/queue/a\n"
        b"content-type:text/plain\n\nhello queue a\x00",
        StompFrame(
            "MESSAGE",
            [
                ("subscription", "0"),
                ("message-id", "007"),
                ("destination", "/queue/a"),
                ("content-type", "text/plain"),
            ],
            b"hello queue a",
        ),
    ),
]

ERROR_BODY = (
    b"The message:\n-----\nMESSAGE\ndestined:/queue/a\nreceipt:message-12345\n\n"
    b"Hello queue a!\n-----\nDid not contain a destination header, which is REQUIRED\n"
    b"for message propagation.\n"
)


@pytest.mark.parametrize(("data", "frame"), SPEC_12)
def test_stomp12_spec_examples_parse(data: bytes, frame: StompFrame) -> None:
    """Each frame example of STOMP 1.2 parses to its command, headers and body."""
    assert one(data) == frame


@pytest.mark.parametrize(("data", "frame"), SPEC_12)
def test_stomp12_spec_examples_encode_to_the_same_octets(data: bytes, frame: StompFrame) -> None:
    """encode_frame gives the specification's octets back (no content-length was there)."""
    assert encode_frame(frame.command, frame.headers, frame.body, content_length=False) == data


def test_stomp12_error_example_with_content_length() -> None:
    """The ERROR example: a body with blank lines and headers inside, sized by content-length."""
    data = (
        b"ERROR\nreceipt-id:message-12345\ncontent-type:text/plain\n"
        + f"content-length:{len(ERROR_BODY)}\n".encode()
        + b"message:malformed frame received\n\n"
        + ERROR_BODY
        + b"\x00"
    )
    frame = one(data)
    assert frame.command == "ERROR"
    assert frame.body == ERROR_BODY
    assert frame.get("message") == "malformed frame received"


def test_stomp12_repeated_header_first_wins() -> None:
    """1.2: "MESSAGE foo:World foo:Hello": foo is World; both entries are kept in order."""
    frame = one(b"MESSAGE\nfoo:World\nfoo:Hello\n\n\x00")
    assert frame.get("foo") == "World"
    assert frame.headers == [("foo", "World"), ("foo", "Hello")]
    assert frame.get("bar") is None
    assert frame.get("bar", "x") == "x"


def test_stomp11_spec_examples() -> None:
    """1.1: version lists, heart-beat and an ERROR with a body."""
    connect = one(b"CONNECT\naccept-version:1.0,1.1,2.0\nhost:stomp.github.org\n\n\x00", "1.1")
    assert connect.get("accept-version") == "1.0,1.1,2.0"
    beat = one(b"CONNECT\nheart-beat:0,1000\naccept-version:1.1\n\n\x00", "1.1")
    assert beat.get("heart-beat") == "0,1000"
    error = one(
        b"ERROR\nversion:1.2,2.1\ncontent-type:text/plain\n\n"
        b"Supported protocol versions are 1.2 2.1\x00",
        "1.1",
    )
    assert error.get("version") == "1.2,2.1"
    assert error.body == b"Supported protocol versions are 1.2 2.1"


def test_stomp10_spec_examples_keep_values_verbatim() -> None:
    """1.0: no escaping, so a backslash is a backslash; values are kept as sent."""
    connect = one(b"CONNECT\nlogin: alice\npasscode:se\\cret\n\n\x00", "1.0")
    assert connect.headers == [("login", " alice"), ("passcode", "se\\cret")]
    connected = one(b"CONNECTED\nsession: 1234\n\n\x00", "1.0")
    assert connected.get("session") == " 1234"
    send = one(b"SEND\ndestination:/queue/a\n\nhello queue a\x00", "1.0")
    assert send.body == b"hello queue a"


# ---- framing ----------------------------------------------------------------------------------
def test_crlf_line_endings() -> None:
    """1.2: EOL may be CR LF, for the command, the headers and the empty line."""
    frame = one(b"SEND\r\ndestination:/queue/a\r\nx:y\r\n\r\nbody\x00")
    assert frame == StompFrame("SEND", [("destination", "/queue/a"), ("x", "y")], b"body")
    mixed = one(b"SEND\ndestination:/queue/a\r\n\nbody\x00")
    assert mixed.headers == [("destination", "/queue/a")]


def test_heartbeats_between_frames() -> None:
    """A bare EOL (LF or CR LF) before, between or after frames is one HEARTBEAT each."""
    items = parse(b"\n\r\nBEGIN\ntransaction:t\n\n\x00\n\nCOMMIT\ntransaction:t\n\n\x00\r\n")
    assert [x if x is HEARTBEAT else x.command for x in items] == [  # type: ignore[attr-defined]
        HEARTBEAT,
        HEARTBEAT,
        "BEGIN",
        HEARTBEAT,
        HEARTBEAT,
        "COMMIT",
        HEARTBEAT,
    ]


def test_lone_cr_waits_for_its_lf() -> None:
    """A CR at the end of a chunk is kept until the LF arrives."""
    parser = StompParser(StompLimits())
    assert parser.feed(b"\r") == []
    assert parser.pending == 1
    assert parser.feed(b"\n") == [HEARTBEAT]
    assert parser.pending == 0
    with pytest.raises(StompError, match="carriage return"):
        StompParser(StompLimits()).feed(b"\rX")


def test_value_may_hold_colons_and_be_empty() -> None:
    """A header line splits at its first colon."""
    frame = one(b"SEND\ndestination:/queue/a:b::c\nempty:\n\n\x00")
    assert frame.headers == [("destination", "/queue/a:b::c"), ("empty", "")]


def test_nul_in_body_with_content_length() -> None:
    """content-length: exactly that many octets, NUL included, then the terminating NUL."""
    body = b"\x00a\x00\x00b\n\n\x00"
    data = encode_frame("SEND", [("destination", "/queue/a")], body)
    assert b"content-length:8\n" in data
    assert one(data).body == body


def test_empty_body_with_content_length_zero() -> None:
    """content-length:0 is an empty body."""
    assert one(b"SEND\ncontent-length:0\n\n\x00").body == b""


def test_first_content_length_wins() -> None:
    """As with any header, the first content-length is the one used."""
    assert one(b"SEND\ncontent-length:2\ncontent-length:5\n\na\x00\x00").body == b"a\x00"


def test_many_frames_in_one_chunk() -> None:
    """A batch of small frames arrives in one read."""
    chunk = b"".join(
        encode_frame("SEND", [("destination", "/queue/a"), ("n", str(i))], b"x" * i)
        for i in range(200)
    )
    frames = parse(chunk)
    assert [f.get("n") for f in frames] == [str(i) for i in range(200)]  # type: ignore[attr-defined]
    assert [f.body for f in frames] == [b"x" * i for i in range(200)]  # type: ignore[attr-defined]


def test_byte_by_byte_gives_the_same_frames() -> None:
    """A stream fed one octet at a time gives the frames of one feed, with pending counting
    the buffered octets of the incomplete frame."""
    data = (
        b"SEND\r\ndestination:/queue/a\r\n\r\nhello\x00\n"
        + encode_frame("SEND", [("a", "b\nc")], b"\x00\x00")
        + b"MESSAGE\nx:y\n\nno length\x00"
    )
    parser = StompParser(StompLimits())
    parser.version = "1.2"
    got: list[object] = []
    for i in range(len(data)):
        got += parser.feed(data[i : i + 1])
        assert parser.pending <= i + 1
    assert got == parse(data)
    assert parser.pending == 0


def _accepted(limits: StompLimits | None = None) -> StompParser:
    parser = StompParser(limits or StompLimits())
    parser.version = "1.2"
    parser.frame_limit = parser.limits.max_frame
    return parser


@pytest.mark.parametrize("size", [1, 1000, 65536, 262144])
def test_large_body_split_across_many_reads(size: int) -> None:
    """A 1 MiB body with content-length, with NULs in it, fed in reads of ``size`` octets
    between two small frames, gives the same frames as one read; pending counts the
    collected octets; what follows the NUL in the last read is parsed on."""
    body = bytes(range(256)) * 4096  # 1 MiB, a NUL every 256 octets
    big = encode_frame("SEND", [("destination", "/queue/a")], body)
    small = encode_frame("SEND", [("n", "2")], b"tail")
    data = encode_frame("SEND", [("n", "0")], b"head") + big + b"\n" + small
    parser = _accepted()
    got: list[object] = []
    for i in range(0, len(data), size):
        got += parser.feed(data[i : i + size])
        if len(got) == 1:
            assert parser.pending <= len(big)
    assert got == parse(data)
    frames = [f for f in got if isinstance(f, StompFrame)]
    assert [f.body for f in frames] == [b"head", body, b"tail"]
    assert got[2] is HEARTBEAT
    assert parser.pending == 0


def test_large_body_chunks_kept_are_not_aliased() -> None:
    """A reused bytearray fed as chunks does not change a body collected from it."""
    body = b"y" * (COLLECT_MIN * 3)
    data = encode_frame("SEND", [("destination", "/queue/a")], body)
    parser = _accepted()
    chunk = bytearray(COLLECT_MIN)
    got: list[object] = []
    for i in range(0, len(data), len(chunk)):
        piece = data[i : i + len(chunk)]
        chunk[: len(piece)] = piece
        got += parser.feed(chunk[: len(piece)])
        chunk[:] = b"z" * len(chunk)
    assert [f.body for f in got] == [body]  # type: ignore[attr-defined]


def test_large_body_not_ending_with_nul_is_refused() -> None:
    """The octet after content-length octets of a collected body must be NUL."""
    length = COLLECT_MIN * 2
    parser = _accepted()
    parser.feed(b"SEND\ncontent-length:%d\n\n" % length + b"x" * 100)
    assert parser.pending > 0
    parser.feed(b"x" * (length - 100))
    with pytest.raises(StompError, match="did not end with NUL"):
        parser.feed(b"x\x00")
    assert parser.pending == 0


def test_oversized_frame_refused_before_its_body_arrives() -> None:
    """A content-length past max_body or a frame past max_frame is refused with the headers:
    nothing of the body is collected."""
    limits = StompLimits(max_frame=COLLECT_MIN * 2, max_body=COLLECT_MIN * 4)
    parser = _accepted(limits)
    with pytest.raises(StompError, match="max_frame"):
        parser.feed(b"SEND\ncontent-length:%d\n\n" % (COLLECT_MIN * 3) + b"x" * 10)
    assert parser.pending < 64  # the headers at most: no body collected
    parser = _accepted()
    with pytest.raises(StompError, match="max_body"):
        parser.feed(b"SEND\ncontent-length:%d\n\n" % (parser.limits.max_body + 1))
    assert parser.pending < 64


def test_pending_counts_the_partial_frame() -> None:
    """pending is what a read deadline watches: octets of a frame not complete yet."""
    parser = StompParser(StompLimits())
    assert parser.feed(b"SEND\n\n\x00SEND\ndesti") != []
    assert parser.pending == len(b"SEND\ndesti")


# ---- escaping ---------------------------------------------------------------------------------
def test_escape_round_trip_12() -> None:
    """1.2 escapes backslash, LF, colon and CR, in names and values, and back."""
    headers = [("a:b\\c", "line1\nline2:x\r\\"), ("plain", "value")]
    data = encode_frame("SEND", headers)
    assert data == b"SEND\na\\cb\\\\c:line1\\nline2\\cx\\r\\\\\nplain:value\n\n\x00"
    assert one(data).headers == headers


def test_escape_round_trip_11() -> None:
    """1.1 escapes backslash, LF and colon; \\r is undefined there."""
    headers = [("k", "a\nb:c\\d")]
    data = encode_frame("SEND", headers, version="1.1")
    assert data == b"SEND\nk:a\\nb\\cc\\\\d\n\n\x00"
    assert one(data, "1.1").headers == headers
    assert "\\r" in error_of(b"SEND\nk:a\\rb\n\n\x00", "1.1")
    with pytest.raises(StompError, match="carriage return"):
        encode_frame("SEND", [("k", "v\r")], version="1.1")


@pytest.mark.parametrize(
    ("char", "escaped"), [("\\", b"\\\\"), ("\n", b"\\n"), (":", b"\\c"), ("\r", b"\\r")]
)
def test_each_escapable_character_alone_is_escaped_12(char: str, escaped: bytes) -> None:
    """A name or value whose only special character is ``char`` is escaped, in a frame
    whose other headers need no escaping (they are written as they are)."""
    headers = [("plain", "value"), (f"n{char}", "v"), ("k", f"a{char}b"), ("last", "x")]
    data = encode_frame("MESSAGE", headers)
    assert data == (
        b"MESSAGE\nplain:value\nn" + escaped + b":v\nk:a" + escaped + b"b\nlast:x\n\n\x00"
    )
    assert one(data).headers == headers


def test_cr_inside_a_value_survives_in_11() -> None:
    """1.1 cannot escape CR but may carry it inside a value (not at its end)."""
    headers = [("k", "a\rb")]
    assert one(encode_frame("SEND", headers, version="1.1"), "1.1").headers == headers


@pytest.mark.parametrize("seq", [b"\\t", b"\\x", b"\\ ", b"\\"])
def test_undefined_escape_is_an_error(seq: bytes) -> None:
    """1.1+: an escape sequence the version does not define (or a trailing backslash)."""
    message = error_of(b"SEND\nk:a" + seq + b"\n\n\x00")
    assert "escape" in message
    assert "escape" in error_of(b"SEND\nk" + seq + b":v\n\n\x00", "1.1")


def test_no_unescaping_in_10_and_in_connect_frames() -> None:
    """1.0 frames, and CONNECT/STOMP/CONNECTED in any version, are not unescaped."""
    assert one(b"SEND\nk:a\\nb\\t\n\n\x00", "1.0").get("k") == "a\\nb\\t"
    for command in (b"CONNECT", b"STOMP", b"CONNECTED"):
        assert one(command + b"\npasscode:a\\cb\\t\n\n\x00", "1.2").get("passcode") == "a\\cb\\t"


def test_no_escaping_in_10_and_connected() -> None:
    """encode_frame writes 1.0 and CONNECTED headers raw and refuses what they cannot carry."""
    assert encode_frame("MESSAGE", [("k", "a:b\\")], version="1.0") == b"MESSAGE\nk:a:b\\\n\n\x00"
    assert encode_frame("CONNECTED", [("server", "a\\b")]) == b"CONNECTED\nserver:a\\b\n\n\x00"
    for headers in ([("k", "a\nb")], [("a:b", "v")], [("k", "v\r")]):
        with pytest.raises(StompError, match="cannot"):
            encode_frame("MESSAGE", headers, version="1.0")
    with pytest.raises(StompError):
        encode_frame("CONNECTED", [("k", "a\nb")])


def test_utf8_headers_round_trip() -> None:
    """Headers are UTF-8 both ways; a non-UTF-8 header block is an error."""
    headers = [("naïve", "日本語:✓")]
    assert one(encode_frame("SEND", headers)).headers == headers
    assert "UTF-8" in error_of(b"SEND\nk:\xff\xfe\n\n\x00")


def test_encode_content_length_rules() -> None:
    """content-length is added for a non-empty body unless given or switched off."""
    assert encode_frame("SEND", [], b"") == b"SEND\n\n\x00"
    assert encode_frame("SEND", [], b"ab") == b"SEND\ncontent-length:2\n\nab\x00"
    assert encode_frame("SEND", [("content-length", "2")], b"ab").count(b"content-length") == 1
    assert encode_frame("SEND", [], b"ab", content_length=False) == b"SEND\n\nab\x00"


# ---- malformed input --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"send\n\n\x00", "unknown STOMP command"),
        (b"HELLO\n\n\x00", "unknown STOMP command"),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "unknown STOMP command"),
        (b"SEND\nno colon here\n\n\x00", "no colon"),
        (b"SEND\ncontent-length:abc\n\nabc\x00", "not a non-negative integer"),
        (b"SEND\ncontent-length:-1\n\n\x00", "not a non-negative integer"),
        (b"SEND\ncontent-length: 3\n\nabc\x00", "not a non-negative integer"),
        (b"SEND\ncontent-length:\n\n\x00", "not a non-negative integer"),
        (b"SEND\ncontent-length:2\n\nabc\x00", "did not end with NUL"),
        (b"SEND\ncontent-length:\xd9\xa3\n\nabc\x00", "not a non-negative integer"),
    ],
)
def test_malformed_frames(data: bytes, words: str) -> None:
    """Each malformed frame raises StompError saying what is wrong."""
    assert words in error_of(data)


def test_commands_are_the_stomp12_set() -> None:
    """Every client and server command of STOMP 1.2 parses."""
    for command in sorted(COMMANDS):
        assert one(command.encode() + b"\n\n\x00").command == command


# ---- limits -----------------------------------------------------------------------------------
SMALL = StompLimits(
    max_frame=300, max_headers=3, max_header_length=40, max_body=100, max_handshake_frame=60
)


def test_max_headers() -> None:
    """More header lines than max_headers is an error; exactly max_headers is fine."""
    ok = b"SEND\na:1\nb:2\nc:3\n\n\x00"
    assert len(parse(ok, limits=SMALL)) == 1
    assert "max_headers" in error_of(b"SEND\na:1\nb:2\nc:3\nd:4\n\n\x00", limits=SMALL)


def test_max_header_length() -> None:
    """A header line over max_header_length octets (UTF-8) is an error."""
    assert len(parse(b"SEND\nk:" + b"v" * 38 + b"\n\n\x00", limits=SMALL)) == 1
    assert "max_header_length" in error_of(b"SEND\nk:" + b"v" * 39 + b"\n\n\x00", limits=SMALL)
    wide = "é" * 20  # 20 characters, 40 octets: a line of 22 characters, 42 octets
    assert "max_header_length" in error_of(b"SEND\nk:" + wide.encode() + b"\n\n\x00", limits=SMALL)


def test_max_body_by_content_length_before_the_body_arrives() -> None:
    """A content-length over max_body is refused as soon as the headers are read."""
    assert "max_body" in error_of(b"SEND\ncontent-length:101\n\n", limits=SMALL)
    assert len(parse(b"SEND\ncontent-length:100\n\n" + b"x" * 100 + b"\x00", limits=SMALL)) == 1


def test_max_body_without_content_length_while_buffering() -> None:
    """Without content-length a body growing past max_body is refused before its NUL."""
    assert "max_body" in error_of(b"SEND\n\n" + b"x" * 101, limits=SMALL)
    assert "max_body" in error_of(b"SEND\n\n" + b"x" * 101 + b"\x00", limits=SMALL)


def test_max_frame_while_buffering_headers() -> None:
    """Headers that never end are refused once they pass the frame limit."""
    parser = StompParser(SMALL)
    parser.frame_limit = SMALL.max_frame
    parser.feed(b"SEND\n" + b"k:v\n" * 50)
    with pytest.raises(StompError, match="max_frame"):
        parser.feed(b"k:v\n" * 50)


def test_max_frame_whole() -> None:
    """Headers plus body over max_frame is an error even when each is within its own limit."""
    limits = StompLimits(max_frame=120, max_body=100, max_handshake_frame=120)
    head = b"SEND\nk:" + b"v" * 30 + b"\n\n"
    assert "max_frame" in error_of(head + b"x" * 90 + b"\x00", limits=limits)
    assert "max_frame" in error_of(head.replace(b"\n\n", b"\ncontent-length:90\n\n"), limits=limits)


def test_handshake_frame_limit_until_raised() -> None:
    """A new parser holds frames to max_handshake_frame; the connection raises the limit."""
    big = b"SEND\n\n" + b"x" * 70 + b"\x00"
    parser = StompParser(SMALL)
    assert parser.frame_limit == SMALL.max_handshake_frame
    with pytest.raises(StompError, match="max_handshake_frame"):
        parser.feed(big)
    raised = StompParser(SMALL)
    raised.frame_limit = SMALL.max_frame
    assert len(raised.feed(big)) == 1


_HEADER_TEXT = st.text(alphabet=st.sampled_from("ab:\\\n\r é"), max_size=6)


@given(st.lists(st.tuples(_HEADER_TEXT, _HEADER_TEXT), max_size=5))
def test_encode_headers_escapes_exactly_the_escapable_characters_12(
    pairs: list[tuple[str, str]],
) -> None:
    """The one-pass test for "nothing to escape" gives the octets of escaping every name and
    value on its own, and the lines parse back to the pairs."""
    table = str.maketrans({"\\": "\\\\", "\n": "\\n", ":": "\\c", "\r": "\\r"})
    expected = "".join(f"{n.translate(table)}:{v.translate(table)}\n" for n, v in pairs)
    lines = encode_headers(pairs, "1.2")
    assert lines == expected.encode("utf-8")
    assert one(b"SEND\n" + lines + b"\n\x00").headers == pairs


def test_encode_headers_is_the_middle_of_encode_frame() -> None:
    pairs = [("destination", "/queue/a"), ("message-id", "ID:1"), ("x", "plain")]
    for version in ("1.0", "1.1", "1.2"):
        frame = encode_frame("MESSAGE", pairs, b"body", version, content_length=False)
        assert frame == b"MESSAGE\n" + encode_headers(pairs, version) + b"\nbody\x00"
    assert encode_headers([("message-id", "ID:1")], "1.2") == b"message-id:ID\\c1\n"
    assert encode_headers([("message-id", "ID:1")], "1.0") == b"message-id:ID:1\n"
    with pytest.raises(StompError, match="no escaping there"):
        encode_headers([("a", "two\nlines")], "1.0")
