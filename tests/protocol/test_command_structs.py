"""The native commands' msgspec options and where the codecs' classes live.

Every command Struct is ``gc=False`` (the cyclic collector does not track it: commands are
cycle-free by type), and the classes moved out of ``message/codec.py`` and
``protocol/frames.py`` (so that mypyc can compile those two) are still importable from there,
the very same objects.
"""

from __future__ import annotations

import gc
import inspect

import msgspec

from ternmq.message import _codec_types, codec
from ternmq.protocol import _frame_types, commands, frames


def _structs() -> list[type[msgspec.Struct]]:
    return [
        cls
        for _, cls in inspect.getmembers(commands, inspect.isclass)
        if issubclass(cls, msgspec.Struct) and cls.__module__ == commands.__name__
    ]


def test_every_command_struct_is_untracked_by_the_cyclic_collector() -> None:
    structs = _structs()
    assert commands.Ack in structs and commands.Deliver in structs
    tracked = [cls.__name__ for cls in structs if cls.__struct_config__.gc]
    assert not tracked, f"declare these gc=False (commands are cycle-free): {tracked}"


def test_a_command_with_a_list_is_not_tracked_built_or_decoded() -> None:
    ack = commands.Ack(corr=3, session_id=1, delivery_ids=[7, 8])
    assert not gc.is_tracked(ack)
    assert gc.is_tracked(ack.delivery_ids)  # the list itself still is
    decoded = frames.FrameDecoder().feed(frames.encode(ack))
    assert decoded == [ack] and not gc.is_tracked(decoded[0])


def test_moved_classes_are_re_exported_unchanged() -> None:
    for name in ("CodecLimitError", "CodecLimits", "MessageCodecError", "MessageDecodeError"):
        assert getattr(codec, name) is getattr(_codec_types, name)
    assert codec.DEFAULT_LIMITS is _codec_types.DEFAULT_LIMITS
    for name in ("Heartbeat", "ProtocolError", "WireCommand"):
        assert getattr(frames, name) is getattr(_frame_types, name)
