"""The STOMP 1.0, 1.1 and 1.2 wire format, sans-IO: bytes in, frames out; frames in, bytes out.

Theory of operation
-------------------
A STOMP frame is a command line, header lines ``name:value``, an empty line, a body, and a
NUL octet (STOMP 1.2 "Augmented BNF")::

    COMMAND EOL *(header EOL) EOL *OCTET NUL *(EOL)

EOL is LF or CR LF (1.2 allows CR LF; this parser accepts it in every version, as the
usual brokers do). A bare EOL between frames is a heart-beat: :meth:`StompParser.feed`
returns :data:`HEARTBEAT` for each one, so the connection can note that the peer is alive.

Headers keep their wire order and repetitions; :meth:`StompFrame.get` answers with the
first occurrence (1.2: "only the first header entry SHOULD be used"). A header line splits at
its first colon, so a value may hold colons. From 1.1 on, names and values are escaped
(``\\\\`` ``\\n`` ``\\c``, and ``\\r`` in 1.2) except in CONNECT, STOMP and CONNECTED frames; an
undefined escape is an error. The parser unescapes per :attr:`StompParser.version`, which
the connection sets once the version is negotiated ("1.0" until then: no unescaping).

The body ends after exactly ``content-length`` octets (which must then be followed by NUL),
or without that header at the first NUL. Limits (:class:`StompLimits`) are checked while the
bytes are buffered, not once a frame completes: a peer cannot make the parser hold more than
:attr:`StompParser.frame_limit` octets of one frame (``max_handshake_frame`` until the
connection is accepted), nor send a frame with more headers, longer header lines, or a
larger body than allowed. Any malformed or oversized input raises :class:`StompError`,
whose message says what was wrong; the connection must then be closed.

Speed: :meth:`StompParser.feed` works on the chunk it is given (or, when a partial frame
is buffered, on one ``bytearray`` holding it and the chunk) with ``find`` and compiled
patterns; there is no Python loop per octet, only per frame, per header line and per run of
heart-beats. Scans resume where the previous chunk left off, so a frame trickling in byte by
byte costs linear, not quadratic, time. A large body with ``content-length`` (at least
:data:`COLLECT_MIN` octets) that is not complete in one chunk is not buffered: the chunks
that carry it are kept as they came (their octets are not looked at, and the NUL is found
by its offset) and joined once when the last arrives, so a 1 MiB body costs one copy
whatever the number of reads.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Iterable
from typing import Final, Literal

from ternmq.protocol.frames import ProtocolError

__all__ = [
    "CLIENT_COMMANDS",
    "COLLECT_MIN",
    "COMMANDS",
    "HEARTBEAT",
    "SERVER_COMMANDS",
    "VERSIONS",
    "Heartbeat",
    "StompError",
    "StompFrame",
    "StompLimits",
    "StompParser",
    "encode_frame",
    "encode_headers",
    "escape_header",
    "unescape_headers",
]

VERSIONS: Final = ("1.0", "1.1", "1.2")

CLIENT_COMMANDS: Final = frozenset(
    {
        "CONNECT",
        "STOMP",
        "SEND",
        "SUBSCRIBE",
        "UNSUBSCRIBE",
        "ACK",
        "NACK",
        "BEGIN",
        "COMMIT",
        "ABORT",
        "DISCONNECT",
    }
)
SERVER_COMMANDS: Final = frozenset({"CONNECTED", "MESSAGE", "RECEIPT", "ERROR"})
COMMANDS: Final = CLIENT_COMMANDS | SERVER_COMMANDS

#: A body of at least this many octets with ``content-length`` that is not complete in the
#: chunk read is kept as the chunks that carry it, joined once at its end (module doc).
COLLECT_MIN: Final = 32 * 1024

# Frames whose headers are never escaped (STOMP 1.2 "Value Encoding").
_RAW_COMMANDS: Final = frozenset({"CONNECT", "STOMP", "CONNECTED"})


class Heartbeat(enum.Enum):
    """The type of :data:`HEARTBEAT` (an enum so that ``is HEARTBEAT`` narrows types)."""

    HEARTBEAT = "heartbeat"


HEARTBEAT: Final = Heartbeat.HEARTBEAT
"""What :meth:`StompParser.feed` returns for a bare EOL between frames."""


class StompError(ProtocolError):
    """Malformed or oversized STOMP input (or a frame that cannot be encoded); ``args[0]``
    says what is wrong. The connection that sent it must be closed."""


@dataclasses.dataclass(frozen=True, slots=True)
class StompLimits:
    """The bounds on what one peer may send (octets unless said otherwise).

    Attributes:
        max_frame: a whole frame: command, headers, body and NUL.
        max_headers: header lines in one frame.
        max_header_length: one header line (name, colon and value), before unescaping.
        max_body: one body.
        max_handshake_frame: a whole frame until the connection is accepted.
    """

    max_frame: int = 1_048_576 + 65_536
    max_headers: int = 64
    max_header_length: int = 8192
    max_body: int = 1_048_576
    max_handshake_frame: int = 8192


@dataclasses.dataclass(slots=True)
class StompFrame:
    """One STOMP frame.

    Attributes:
        command: as on the wire, e.g. ``"SEND"``.
        headers: ``(name, value)`` in wire order, unescaped; repeated names are kept.
        body: the octets between the empty line and the NUL.
    """

    command: str
    headers: list[tuple[str, str]]
    body: bytes = b""

    def get(self, name: str, default: str | None = None) -> str | None:
        """The value of the first header called ``name`` (STOMP 1.2: the first wins), or
        ``default``."""
        for key, value in self.headers:
            if key == name:
                return value
        return default


# ---- escaping ------------------------------------------------------------------------------
_UNESCAPE_11: Final = {"\\": "\\", "n": "\n", "c": ":"}
_UNESCAPE_12: Final = {**_UNESCAPE_11, "r": "\r"}
_ESCAPE_SEQ: Final = re.compile(r"\\(.?)", re.DOTALL)
_HEAD_END: Final = re.compile(rb"\n\r?\n")  # the empty line after the headers
_EOLS: Final = re.compile(rb"(?:\r?\n)+")  # heart-beats between frames


def _escape_11(text: str) -> str:
    """``text`` escaped for a STOMP 1.1 header (backslash first, so that no escape sequence
    is escaped again; a chain of ``str.replace`` costs little when nothing matches)."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\c")


def _escape_12(text: str) -> str:
    """``text`` escaped for a STOMP 1.2 header: as 1.1, and a carriage return too."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\c").replace("\r", "\\r")


def escape_header(text: str, version: str) -> str:
    """A header name or value escaped for a STOMP ``version`` 1.1 or 1.2 frame (what
    :func:`encode_headers` does to each; 1.0 has no escaping: use :func:`encode_headers`,
    which refuses what 1.0 cannot carry)."""
    return _escape_12(text) if version == "1.2" else _escape_11(text)


def _unescape(text: str, table: dict[str, str], version: str) -> str:
    """``text`` with its escape sequences replaced.

    Raises:
        StompError: an escape sequence that ``version`` does not define.
    """

    def one(match: re.Match[str]) -> str:
        char = match.group(1)
        try:
            return table[char]
        except KeyError:
            raise StompError(
                f"undefined escape sequence {match.group(0)!r} in a STOMP {version} header: "
                "escape a backslash as \\\\, a newline as \\n, a colon as \\c"
                + (", a carriage return as \\r" if version == "1.2" else "")
            ) from None

    return _ESCAPE_SEQ.sub(one, text)


def _shorten(text: str) -> str:
    """``text`` cut to 40 characters for an error message (the peer chose its length)."""
    return text if len(text) <= 40 else text[:40] + "..."


def unescape_headers(headers: list[tuple[str, str]], version: str) -> list[tuple[str, str]]:
    """Headers read raw (as a "1.0" parser reads them) with ``version``'s escapes decoded:
    for frames parsed before the version was known.

    Raises:
        StompError: an escape sequence that ``version`` does not define.
    """
    if version == "1.0":
        return headers
    table = _UNESCAPE_12 if version == "1.2" else _UNESCAPE_11
    return [
        (
            _unescape(name, table, version) if "\\" in name else name,
            _unescape(value, table, version) if "\\" in value else value,
        )
        for name, value in headers
    ]


def encode_frame(
    command: str,
    headers: Iterable[tuple[str, str]],
    body: bytes = b"",
    version: str = "1.2",
    *,
    content_length: bool = True,
) -> bytes:
    """One frame as octets, NUL-terminated, its headers escaped per ``version`` (none in
    1.0 and in CONNECT, STOMP and CONNECTED frames).

    With ``content_length`` (the default) a non-empty body gets a ``content-length`` header
    unless ``headers`` has one, so a body may hold NUL octets.

    Raises:
        StompError: a header that cannot be sent unescaped (a newline in 1.0 or a
            CONNECTED frame, a colon in a name, a carriage return at the end of a value).
    """
    pairs = list(headers)
    if content_length and body and not any(k == "content-length" for k, _ in pairs):
        pairs.append(("content-length", str(len(body))))
    lines = encode_headers(pairs, version, raw=command in _RAW_COMMANDS, command=command)
    return b"".join((command.encode("utf-8"), b"\n", lines, b"\n", body, b"\x00"))


def encode_headers(
    headers: Iterable[tuple[str, str]],
    version: str = "1.2",
    *,
    raw: bool = False,
    command: str = "MESSAGE",
) -> bytes:
    """Header lines as octets, each ending with LF, escaped per ``version`` (none in 1.0,
    nor with ``raw``, as in CONNECT, STOMP and CONNECTED frames): the middle of a frame,
    for a caller that assembles frames from parts it reuses (:func:`encode_frame` is one).

    Raises:
        StompError: a header that cannot be sent unescaped (a newline in 1.0 or a
            ``raw`` frame, a colon in a name, a carriage return at the end of a value);
            ``command`` names the frame in the message.
    """
    pairs = headers if isinstance(headers, list) else list(headers)
    if version == "1.0" or raw:
        for name, value in pairs:
            if "\n" in name or "\n" in value or ":" in name or name.endswith("\r"):
                raise StompError(
                    f"header {name!r} cannot be sent in a STOMP {version} {command} frame "
                    "(no escaping there): remove newlines, and colons from the name"
                )
            if value.endswith("\r"):
                raise StompError(
                    f"header {name!r} ends with a carriage return, which a STOMP {version} "
                    f"{command} frame cannot carry unescaped: remove it"
                )
        lines = [f"{name}:{value}\n" for name, value in pairs]
    else:
        # Most headers hold no character to escape: one pass over the lines tells (each
        # line has one colon and one LF of its own), and they are the octets.
        text = "".join([f"{name}:{value}\n" for name, value in pairs])
        n = len(pairs)
        if text.count(":") == n and text.count("\n") == n and "\\" not in text and "\r" not in text:
            return text.encode("utf-8")
        escape = _escape_12 if version == "1.2" else _escape_11
        if version == "1.1":
            for name, value in pairs:
                if value.endswith("\r") or name.endswith("\r"):
                    raise StompError(
                        f"header {name!r} ends with a carriage return, which STOMP 1.1 cannot "
                        "escape: remove it"
                    )
        lines = [f"{escape(name)}:{escape(value)}\n" for name, value in pairs]
    return "".join(lines).encode("utf-8")


# ---- parsing -------------------------------------------------------------------------------
class StompParser:
    """Split a byte stream into STOMP frames and heart-beats.

    Args:
        limits: the bounds on the peer's input.

    Attributes:
        version: the negotiated version; decides header unescaping ("1.0": none).
        frame_limit: largest whole frame accepted now, octets; ``limits.max_handshake_frame``
            until the connection raises it (to ``limits.max_frame``) once accepted.
    """

    __slots__ = ("_buf", "_have", "_head", "_parts", "_scan", "frame_limit", "limits", "version")

    def __init__(self, limits: StompLimits) -> None:
        self.limits = limits
        self.version = "1.0"
        self.frame_limit = min(limits.max_handshake_frame, limits.max_frame)
        self._buf = bytearray()
        # Where the search for the end of the buffered partial frame resumes (its headers'
        # end, or its NUL without content-length); 0 for a new frame.
        self._scan = 0
        # The parsed head of the buffered partial frame once its headers are complete:
        # command, headers, body offset and content-length (None: up to the first NUL).
        self._head: tuple[str, list[tuple[str, str]], int, int | None] | None = None
        # A large body being collected (module doc): the chunks, or parts of them, that
        # hold it so far (None: not collecting), and how many octets they hold.
        self._parts: list[bytes | bytearray | memoryview] | None = None
        self._have = 0

    @property
    def pending(self) -> int:
        """Octets buffered of a frame that is not complete yet."""
        return len(self._buf) + self._have

    def feed(self, data: bytes) -> list[StompFrame | Literal[Heartbeat.HEARTBEAT]]:
        """Add received octets; return the frames and heart-beats they complete, in order.

        Raises:
            StompError: malformed input, or input past a limit (the message names it).
                Nothing is returned then; the connection must be closed.
        """
        if type(data) is not bytes:  # a chunk may be kept (a large body): it must not change
            data = bytes(data)
        out: list[StompFrame | Literal[Heartbeat.HEARTBEAT]] = []
        pos = 0
        if self._parts is not None:  # nothing else is buffered then
            pos = self._collect(data, out)
            if pos < 0:
                return out
        buf = self._buf
        src: bytes | bytearray
        if buf:
            buf += data
            src = buf
        else:
            src = data  # nothing buffered: parse the chunk itself, keep only its tail
        end = len(src)
        try:
            while pos < end:
                first = src[pos]
                if first == 10 or first == 13:  # heart-beats: a run of LF or CR LF
                    run = _EOLS.match(src, pos)
                    if run is None:  # a CR: wait for its LF, or refuse another octet
                        if pos + 1 == end:
                            break
                        raise StompError(
                            "a carriage return not followed by a line feed between frames: "
                            "end lines with LF or CR LF"
                        )
                    after = run.end()
                    out.extend([HEARTBEAT] * src.count(b"\n", pos, after))
                    pos = after
                    continue
                done = self._frame(src, pos, end)
                if done is None:
                    if self._parts is not None:  # a large body: its chunks are kept
                        pos = end
                    break
                frame, pos = done
                out.append(frame)
        finally:
            if src is buf:
                if pos:
                    del buf[:pos]
            elif pos < end:
                buf += memoryview(src)[pos:] if pos else src
        return out

    def _collect(self, data: bytes, out: list[StompFrame | Literal[Heartbeat.HEARTBEAT]]) -> int:
        """Add ``data`` to the large body being collected; once it completes, append its
        frame to ``out`` and return the offset in ``data`` after its NUL (-1: the body
        needs more).

        Raises:
            StompError: the octet after ``content-length`` octets of body is not NUL.
        """
        parts = self._parts
        head = self._head
        assert parts is not None and head is not None
        command, headers, _, length = head
        assert length is not None
        need = length + 1 - self._have  # octets of this frame still to come, NUL included
        if len(data) < need:
            parts.append(data)
            self._have += len(data)
            return -1
        if data[need - 1] != 0:
            self._reset()
            raise StompError(
                f"the body of {command} did not end with NUL after content-length "
                f"({length}) octets: send the exact body length, then NUL"
            )
        if need > 1:
            parts.append(memoryview(data)[: need - 1])
        self._reset()
        out.append(StompFrame(command, headers, b"".join(parts)))
        return need

    def _reset(self) -> None:
        """Forget the partial frame (it completed, or it is refused)."""
        self._head = None
        self._scan = 0
        self._parts = None
        self._have = 0

    def _frame(self, buf: bytes | bytearray, start: int, end: int) -> tuple[StompFrame, int] | None:
        """Parse the frame starting at ``start``: the frame and the offset after its NUL,
        or None if it is not complete yet (then, for a large body, :attr:`_parts` holds
        what ``buf`` has of it from ``start``: the caller drops those octets).

        Raises:
            StompError: the frame is malformed or past a limit.
        """
        limit = self.frame_limit
        head = self._head
        if head is None:
            # The header block ends at the first empty line: LF LF or LF CR LF. The search
            # resumes 2 octets before the previous chunk's end (a separator may straddle).
            # The search stops at the frame limit, so a long batch costs no more than it.
            scan = self._scan
            found = _HEAD_END.search(
                buf, start + scan - 2 if scan > 2 else start, min(end, start + limit + 3)
            )
            if found is None:
                if end - start > limit:
                    self._too_big(end - start, limit)
                self._scan = end - start
                return None
            head_end, body_start = found.span()
            if body_start - start > limit:
                self._too_big(body_start - start, limit)
            command, headers = self._parse_head(buf, start, head_end)
            length = None
            for name, value in headers:
                if name == "content-length":
                    length = self._length(value)
                    if body_start + length + 1 - start > limit:
                        self._too_big(body_start + length + 1 - start, limit)
                    # The usual frame: whole in this chunk (nothing to remember).
                    nul = body_start + length
                    if nul < end and buf[nul] == 0:
                        if scan:
                            self._scan = 0
                        body = buf[body_start:nul]
                        if type(body) is not bytes:
                            body = bytes(body)
                        return StompFrame(command, headers, body), nul + 1
                    break
            head = self._head = (command, headers, body_start - start, length)
            self._scan = body_start - start
        command, headers, body_offset, length = head
        body_start = start + body_offset
        if length is not None:
            nul = body_start + length
            if nul >= end:
                if length >= COLLECT_MIN:
                    # Kept as it comes (module doc); a bytearray's octets are copied, as
                    # the caller reuses it; a chunk's are immutable.
                    part = buf[body_start:end] if type(buf) is bytearray else memoryview(buf)
                    if type(part) is memoryview:
                        part = part[body_start:end]
                    self._parts = [part]
                    self._have = end - body_start
                return None
            if buf[nul] != 0:
                self._head = None
                raise StompError(
                    f"the body of {command} did not end with NUL after content-length "
                    f"({length}) octets: send the exact body length, then NUL"
                )
        else:
            nul = buf.find(b"\x00", start + self._scan)
            max_body = self.limits.max_body
            if nul < 0:
                self._too_big(end - start, limit)
                if end - body_start > max_body:
                    self._head = None
                    raise StompError(
                        f"a body of more than {max_body} octets (max_body): send a smaller message"
                    )
                self._scan = end - start
                return None
            self._too_big(nul + 1 - start, limit)
            if nul - body_start > max_body:
                self._head = None
                raise StompError(
                    f"a body of {nul - body_start} octets exceeds max_body ({max_body}): "
                    "send a smaller message"
                )
        self._head = None
        self._scan = 0
        body = buf[body_start:nul]
        return StompFrame(command, headers, body if type(body) is bytes else bytes(body)), nul + 1

    def _too_big(self, size: int, limit: int) -> None:
        """Raise if ``size`` octets of one frame exceed ``limit``.

        Raises:
            StompError: they do.
        """
        if size > limit:
            which = "max_frame" if limit == self.limits.max_frame else "max_handshake_frame"
            self._reset()
            raise StompError(
                f"a frame of more than {limit} octets ({which}; {size} octets of it so far): "
                "send smaller frames"
                + ("" if which == "max_frame" else ", and nothing large before CONNECTED")
            )

    def _length(self, text: str) -> int:
        """The value of a ``content-length`` header.

        Raises:
            StompError: not a non-negative decimal integer, or over ``max_body``.
        """
        if not (text.isascii() and text.isdigit()) or len(text) > 19:
            raise StompError(
                f"content-length {text!r} is not a non-negative integer: send the body's "
                "length in octets, or leave the header out"
            )
        length = int(text)
        if length > self.limits.max_body:
            raise StompError(
                f"content-length {length} exceeds max_body ({self.limits.max_body}): "
                "send a smaller message"
            )
        return length

    def _parse_head(
        self, buf: bytes | bytearray, start: int, head_end: int
    ) -> tuple[str, list[tuple[str, str]]]:
        """The command and headers of the header block ``buf[start:head_end]`` (its last
        line's LF excluded).

        Raises:
            StompError: not UTF-8, an unknown command, a header line without a colon, too
                many or too long header lines, an undefined escape sequence.
        """
        try:
            text = buf[start:head_end].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StompError(f"frame headers are not UTF-8 ({exc}): encode them in UTF-8") from None
        lines = text.split("\n")
        command = lines[0]
        if command.endswith("\r"):
            command = command[:-1]
        if command not in COMMANDS:
            raise StompError(
                f"unknown STOMP command {_shorten(command)!r}: send one of "
                + ", ".join(sorted(COMMANDS))
            )
        limits = self.limits
        if len(lines) - 1 > limits.max_headers:
            raise StompError(
                f"{command} has {len(lines) - 1} headers, over max_headers "
                f"({limits.max_headers}): send fewer headers"
            )
        version = self.version
        unescape = version != "1.0" and command not in _RAW_COMMANDS
        table = _UNESCAPE_12 if version == "1.2" else _UNESCAPE_11
        max_line = limits.max_header_length
        if head_end - start <= max_line and "\r" not in text and "\\" not in text:
            # The usual frame: no line can be over the limit (the whole block is not), no
            # CR to strip, nothing to unescape; a line without a colon takes the long way.
            pairs: list[tuple[str, str]] = []
            for line in lines[1:]:
                name, colon, value = line.partition(":")
                if not colon:
                    break
                pairs.append((name, value))
            else:
                return command, pairs
        headers: list[tuple[str, str]] = []
        for line in lines[1:] if len(lines) > 1 else ():
            if line.endswith("\r"):
                line = line[:-1]
            if len(line) > max_line or (
                len(line) * 4 > max_line and len(line.encode("utf-8")) > max_line
            ):
                raise StompError(
                    f"a header line of {command} is over max_header_length ({max_line} "
                    f"octets): send shorter headers"
                )
            name, colon, value = line.partition(":")
            if not colon:
                raise StompError(
                    f"header line {_shorten(line)!r} of {command} has no colon: write name:value"
                )
            if unescape:
                if "\\" in name:
                    name = _unescape(name, table, version)
                if "\\" in value:
                    value = _unescape(value, table, version)
            headers.append((name, value))
        return command, headers
