"""The native wire format: length-prefixed frames carrying the commands of ``commands.py``.

Sans-IO (STYLE rule 1): :class:`FrameDecoder` takes bytes and gives commands; :func:`encode`
gives bytes. No socket, thread, clock or log here.

Format (also in ``docs/protocol.md``):

- A connection opens with an 8-byte *preamble* from the client: the magic ``b"TMQP"``, then
  the protocol major and minor version (one octet each) and two reserved zero octets. The
  server answers with its own preamble; a server that does not speak the client's major
  version closes the connection.
- Then each frame is a 4-octet big-endian unsigned length ``n`` followed by ``n`` octets: one
  MessagePack-encoded command: an array whose first element is the command's name
  (``["Send", corr, session_id, ...]``) followed by its fields in declaration order.
  ``Heartbeat`` frames keep an idle link alive.
- Limits are constructor arguments; a frame longer than ``max_frame`` or a payload that is
  not a valid command raises :class:`ProtocolError` naming the limit or the problem.

The classes mypyc cannot take (the msgspec ``Heartbeat`` and :class:`ProtocolError`) live in
``_frame_types.py`` and are re-exported here, so that this module compiles; it is not in
``setup.py``'s ``COMPILED`` list: compiled, it measured slower (docs/performance.md).
"""

from __future__ import annotations

import struct
from typing import Final

import msgspec

from ternmq.protocol._frame_types import Heartbeat, ProtocolError, WireCommand

__all__ = [
    "DEFAULT_MAX_FRAME",
    "MAGIC",
    "PREAMBLE",
    "VERSION",
    "FrameDecoder",
    "Heartbeat",
    "ProtocolError",
    "WireCommand",
    "check_preamble",
    "encode",
]

MAGIC: Final = b"TMQP"
VERSION: Final = (1, 0)
PREAMBLE: Final = MAGIC + bytes(VERSION) + b"\x00\x00"
DEFAULT_MAX_FRAME: Final = 32 * 1024 * 1024
_LEN = struct.Struct(">I")


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(WireCommand)


def encode(cmd: WireCommand) -> bytes:
    """One frame: length prefix and the encoded command."""
    body = _encoder.encode(cmd)
    return _LEN.pack(len(body)) + body


def check_preamble(data: bytes) -> tuple[int, int]:
    """Validate an 8-byte preamble and return the peer's (major, minor) version.

    Raises:
        ProtocolError: not a ternmq preamble, or a major version this side does not speak.
    """
    if len(data) != len(PREAMBLE) or data[:4] != MAGIC:
        raise ProtocolError(
            "not a ternmq connection: the peer did not send the TMQP preamble "
            "(is it speaking another protocol, e.g. STOMP or TLS to a plain port?)"
        )
    major, minor = data[4], data[5]
    if major != VERSION[0]:
        raise ProtocolError(
            f"protocol version {major}.{minor} is not supported; this side speaks {VERSION[0]}.x"
        )
    return major, minor


class FrameDecoder:
    """Split a byte stream into commands.

    Args:
        max_frame: largest frame payload accepted, octets.
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[WireCommand]:
        """Add received bytes; return every complete command they finish.

        Raises:
            ProtocolError: a frame over ``max_frame`` or a payload that is not a command.
        """
        # Frames are decoded from views of the received bytes, not copies; only a partial
        # frame at the end is kept (decoded commands hold no reference to the input: msgspec
        # copies bytes fields). With nothing kept from before, ``data`` is parsed in place.
        # Deleting the consumed head of the bytearray gives its memory back once less than
        # half of it is left (CPython's bytearray shrinks then), so a large frame that came
        # in pieces leaves no large buffer behind.
        buf = self._buf
        src: bytes | bytearray = data
        if buf:
            buf += data
            src = buf
        out: list[WireCommand] = []
        pos = 0
        end = len(src)
        with memoryview(src) as view:
            while end - pos >= 4:
                (n,) = _LEN.unpack_from(view, pos)
                if n > self.max_frame:
                    raise ProtocolError(f"frame of {n} octets exceeds max_frame ({self.max_frame})")
                start = pos + 4
                if end - start < n:
                    break
                pos = start + n
                try:
                    out.append(_decoder.decode(view[start:pos]))
                except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
                    raise ProtocolError(f"malformed frame: {exc}") from exc
        if src is buf:
            if pos:
                del buf[:pos]
        elif pos < end:
            buf += data[pos:]
        return out

    def release(self) -> None:
        """Drop the partial frame kept so far and its memory (the stream is abandoned)."""
        self._buf = bytearray()

    @property
    def buffered(self) -> int:
        """Octets received but not yet part of a complete frame."""
        return len(self._buf)
