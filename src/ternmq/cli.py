"""The ``ternmq`` command line.

``ternmq demo`` runs a short, self-contained tour: an embedded broker, a producer, a
selective consumer, a browser, a topic with two subscribers, and the binary encoding of a
message. The network server (``ternmq serve``) arrives with the network broker.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime
import json
import math
import os
import platform
import shutil
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ternmq._variant import describe
from ternmq._version import __version__
from ternmq.errors import JMSException, MessageEOFException

if TYPE_CHECKING:
    from ternmq.admin import Admin
    from ternmq.client import Connection, MessageConsumer, Session
    from ternmq.destination import Destination
    from ternmq.message import Message
    from ternmq.protocol.commands import ConnectionInfo, DestinationStat, SubscriptionInfo


def _demo() -> int:
    from ternmq import (
        ConnectionFactory,
        DeliveryMode,
        EmbeddedBroker,
        Queue,
        Session,
        TextMessage,
        Topic,
    )
    from ternmq.message.codec import decode_message, encode_message
    from ternmq.selector import compile_selector

    print("ternmq demo: an embedded broker in this process (vm://demo)\n")
    with EmbeddedBroker(f"demo-{uuid.uuid4().hex[:6]}") as broker:
        factory = ConnectionFactory(broker.url)
        with factory.create_connection() as conn:
            session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
            orders = Queue("orders")
            producer = session.create_producer(orders)
            for i, (region, amount) in enumerate(
                [("EU", 120), ("US", 80), ("EU", 640), ("APAC", 300), ("EU", 250)]
            ):
                msg = session.create_text_message(f"order #{i}")
                msg.set_string_property("region", region)
                msg.set_int_property("amount", amount)
                producer.send(msg, priority=9 if amount > 500 else 4)
            print(f"sent 5 orders to {orders}")

            browser = session.create_browser(orders)
            print("browse (priority first, not consumed):", [m.text for m in browser])  # type: ignore[attr-defined]

            selector = "region = 'EU' AND amount BETWEEN 100 AND 500"
            consumer = session.create_consumer(orders, selector)
            conn.start()
            print(f"consumer with selector {selector!r} receives:")
            while (m := consumer.receive(0.2)) is not None:
                print(
                    f"  {m.text}  region={m.get_string_property('region')} "  # type: ignore[attr-defined]
                    f"amount={m.get_int_property('amount')} "
                    f"JMSXDeliveryCount={m.get_int_property('JMSXDeliveryCount')}"
                )
            consumer.close()
            rest = session.create_consumer(orders)
            print("left for others:", [m.text for m in iter(lambda: rest.receive(0.2), None)])  # type: ignore[attr-defined]

            alerts = Topic("alerts")
            subs = [session.create_consumer(alerts), session.create_consumer(alerts, "level > 1")]
            pub = session.create_producer(alerts)
            pub.delivery_mode = DeliveryMode.NON_PERSISTENT
            for level in (1, 2):
                a = session.create_text_message(f"alert level {level}")
                a.set_int_property("level", level)
                pub.send(a)
            for n, sub in enumerate(subs):
                got = []
                while (m := sub.receive(0.2)) is not None:
                    got.append(m.text)  # type: ignore[attr-defined]
                print(f"topic subscriber {n} got: {got}")

            sample = session.create_text_message("x" * 256)
            for k in range(5):
                sample.set_int_property(f"p{k}", k)
            data = encode_message(sample)
            back = decode_message(data)
            assert isinstance(back, TextMessage)
            sel = compile_selector("p3 = 3 AND p4 > 1")
            assert sel is not None
            print(
                f"\nencoded a 256-byte TextMessage with 5 properties into {len(data)} bytes; "
                f"decoded equal: {back.text == sample.text}; selector matches: {sel.matches(back)}"
            )
    print("\ndone.")
    return 0


# ---- operator commands ------------------------------------------------------------------
#
# ``send``, ``receive``, ``browse``, ``stat``, ``purge`` and ``bench`` talk to a running broker
# at ``--url`` (default ``tcp://127.0.0.1:61616`` or ``$TERNMQ_URL``; ``vm://NAME`` reaches an
# embedded broker in this process). Expected failures print one line on stderr and exit
# non-zero, without a traceback: 2 for a usage error (destination text, property syntax),
# 1 for everything the broker or the network says (unreachable, refused, nothing received).

DEFAULT_URL = "tcp://127.0.0.1:61616"
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141  # stdout closed by its reader (``| head``): as a program killed by SIGPIPE
BENCH_PROPERTY = "ternmq_bench_sent_ns"

# ``NAME:TYPE=VALUE`` property types and the message setter each one uses.
_PROPERTY_SETTERS: dict[str, str] = {
    "string": "set_string_property",
    "str": "set_string_property",
    "int": "set_int_property",
    "long": "set_long_property",
    "short": "set_short_property",
    "byte": "set_byte_property",
    "bool": "set_boolean_property",
    "boolean": "set_boolean_property",
    "double": "set_double_property",
    "float": "set_float_property",
}

PropertyValue = bool | int | float | str


class _CliError(Exception):
    """An expected failure: reported as one line on stderr, exit status 1."""


class _UsageError(_CliError):
    """A mistake on the command line: reported as one line on stderr, exit status 2."""


class _Interrupted(Exception):
    """Ctrl-C in a loop that has done part of its work: the text says how far it got."""


def _error(text: str) -> None:
    print(f"ternmq: error: {text}", file=sys.stderr)


def _parse_destination(text: str) -> Destination:
    """``queue://NAME`` or ``topic://NAME`` (usage error otherwise)."""
    from ternmq import destination

    try:
        dest = destination(text)
    except JMSException as exc:
        raise _UsageError(str(exc)) from exc
    if dest.is_temporary:
        raise _UsageError(
            f"{text!r} is a temporary destination: only its own connection can use it"
        )
    return dest


def _parse_property(spec: str) -> tuple[str, str, PropertyValue]:
    """``NAME=VALUE`` (a string) or ``NAME:TYPE=VALUE``; returns (name, setter, value).

    Raises:
        _UsageError: the syntax, type, value or name is not acceptable.
    """
    from ternmq import Message

    key, eq, raw = spec.partition("=")
    types = ", ".join(sorted(_PROPERTY_SETTERS))
    if not eq:
        raise _UsageError(
            f"bad property {spec!r}: write NAME=VALUE (a string) or NAME:TYPE=VALUE "
            f"(TYPE one of {types})"
        )
    name, colon, kind = key.partition(":")
    kind = kind.strip().lower() if colon else "string"
    setter = _PROPERTY_SETTERS.get(kind)
    if setter is None:
        raise _UsageError(f"bad property {spec!r}: unknown type {kind!r}; use one of {types}")
    value: PropertyValue
    try:
        if setter == "set_string_property":
            value = raw
        elif setter == "set_boolean_property":
            if raw.strip().lower() not in ("true", "false"):
                raise ValueError(f"{raw!r} is not true or false")
            value = raw.strip().lower() == "true"
        elif setter in ("set_double_property", "set_float_property"):
            value = _number(raw, float, "a number")
        else:
            value = _number(raw, int, "an integer")
        getattr(Message(), setter)(name, value)  # checks the name and the range
    except (ValueError, TypeError, JMSException) as exc:
        raise _UsageError(f"bad property {spec!r}: {exc}") from exc
    return name, setter, value


def _number(raw: str, kind: type[int] | type[float], what: str) -> int | float:
    try:
        return kind(raw.strip())
    except ValueError:
        raise ValueError(f"{raw!r} is not {what}") from None


def _open_connection(
    url: str,
    user: str | None,
    password: str | None,
    prefetch: int | None = None,
    block: bool | None = None,
) -> Connection:
    """A connection to the broker at ``url``, or a one-line :class:`_CliError`; ``block``
    overrides the URL's ``block_on_non_persistent_send``."""
    from ternmq import ConnectionFactory, JMSSecurityException

    try:
        factory = ConnectionFactory(
            url, user, password, prefetch=prefetch, block_on_non_persistent_send=block
        )
    except JMSException as exc:
        raise _UsageError(f"invalid broker URL {url!r}: {exc}") from exc
    try:
        return factory.create_connection()
    except JMSSecurityException as exc:
        raise _CliError(f"the broker at {url} refused the connection: {exc}") from exc
    except (JMSException, OSError) as exc:
        text = str(exc)
        if not text.startswith("cannot reach the broker"):
            text = f"cannot reach the broker at {url}: {text}"
        raise _CliError(text) from exc


@contextlib.contextmanager
def _connected(args: argparse.Namespace, prefetch: int | None = None) -> Iterator[Connection]:
    conn = _open_connection(args.url, args.user, args.password, prefetch)
    try:
        yield conn
    finally:
        conn.close()


def _epoch_ms(ms: int) -> str:
    when = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return f"{ms} ({when.strftime('%Y-%m-%dT%H:%M:%S.%f')[:-3]}Z)"


def _format_message(msg: Message) -> str:
    """A readable, multi-line description: id, headers, properties, body."""
    from ternmq import BytesMessage, MapMessage, ObjectMessage, StreamMessage, TextMessage

    lines = [f"message {msg.jms_message_id}"]
    headers: list[tuple[str, object]] = [
        ("JMSDestination", msg.jms_destination),
        ("JMSDeliveryMode", "PERSISTENT" if msg.jms_delivery_mode == 2 else "NON_PERSISTENT"),
        ("JMSPriority", msg.jms_priority),
        ("JMSTimestamp", _epoch_ms(msg.jms_timestamp) if msg.jms_timestamp else 0),
        ("JMSRedelivered", "true" if msg.jms_redelivered else "false"),
    ]
    if msg.jms_correlation_id is not None:
        headers.append(("JMSCorrelationID", msg.jms_correlation_id))
    if msg.jms_type is not None:
        headers.append(("JMSType", msg.jms_type))
    if msg.jms_reply_to is not None:
        headers.append(("JMSReplyTo", msg.jms_reply_to))
    if msg.jms_expiration:
        headers.append(("JMSExpiration", _epoch_ms(msg.jms_expiration)))
    if msg.jms_delivery_time and msg.jms_delivery_time != msg.jms_timestamp:
        headers.append(("JMSDeliveryTime", _epoch_ms(msg.jms_delivery_time)))
    lines += [f"  {name}: {value}" for name, value in headers]
    props = ", ".join(
        f"{name}={msg.get_object_property(name)!r}" for name in sorted(msg.get_property_names())
    )
    lines.append(f"  properties: {props or '(none)'}")
    if isinstance(msg, TextMessage):
        lines.append(f"  text: {msg.text if msg.text is not None else '(null)'}")
    elif isinstance(msg, BytesMessage):
        lines.append(f"  bytes: {msg.body_length} bytes")
    elif isinstance(msg, MapMessage):
        body = ", ".join(f"{k}={msg.get_object(k)!r}" for k in sorted(msg.get_map_names()))
        lines.append(f"  map: {body or '(empty)'}")
    elif isinstance(msg, StreamMessage):
        lines.append("  stream: (a StreamMessage body; not shown)")
    elif isinstance(msg, ObjectMessage):
        lines.append("  object: (an ObjectMessage body; not decoded)")
    else:
        lines.append("  body: (none)")
    return "\n".join(lines)


def _json_value(value: object) -> object:
    """A property or map value as JSON: bytes become ``{"base64": ...}``."""
    if isinstance(value, bytes | bytearray):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    return value


def _message_json(msg: Message) -> str:
    """One line of JSON: id, headers, typed properties and the body (text, base64 bytes, a
    map or a stream's values; an ObjectMessage body is not decoded)."""
    from ternmq import BytesMessage, MapMessage, ObjectMessage, StreamMessage, TextMessage

    out: dict[str, object] = {
        "id": msg.jms_message_id,
        "destination": None if msg.jms_destination is None else str(msg.jms_destination),
        "delivery_mode": "PERSISTENT" if msg.jms_delivery_mode == 2 else "NON_PERSISTENT",
        "priority": msg.jms_priority,
        "timestamp": msg.jms_timestamp,
        "redelivered": msg.jms_redelivered,
        "correlation_id": msg.jms_correlation_id,
        "type": msg.jms_type,
        "reply_to": None if msg.jms_reply_to is None else str(msg.jms_reply_to),
        "expiration": msg.jms_expiration,
        "delivery_time": msg.jms_delivery_time,
        "properties": {
            name: _json_value(msg.get_object_property(name))
            for name in sorted(msg.get_property_names())
        },
    }
    if isinstance(msg, TextMessage):
        out["kind"], out["text"] = "text", msg.text
    elif isinstance(msg, BytesMessage):
        out["kind"], out["bytes"] = "bytes", _json_value(msg.get_body(bytes) or b"")
    elif isinstance(msg, MapMessage):
        out["kind"] = "map"
        out["map"] = {k: _json_value(msg.get_object(k)) for k in sorted(msg.get_map_names())}
    elif isinstance(msg, StreamMessage):
        msg.reset()
        values: list[object] = []
        with contextlib.suppress(MessageEOFException):
            while True:
                values.append(_json_value(msg.read_object()))
        out["kind"], out["stream"] = "stream", values
    elif isinstance(msg, ObjectMessage):
        out["kind"] = "object"  # not decoded: unpickling is the receiver's decision
    else:
        out["kind"] = "message"
    return json.dumps(out, ensure_ascii=False)


def _write_out(text: str) -> None:
    """Write ``text`` and its newline to stdout in one piece, now: once this returns the
    reader has it (``print`` writes the newline apart, and a reader that leaves in between
    would have the text but not its end)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _send_body(args: argparse.Namespace) -> str | bytes:
    """What ``send`` sends: ``--text``, or ``--file`` (``-``: standard input) as text if it is
    UTF-8 and ``--bytes`` is not given, else as bytes."""
    if args.file is None:
        return str(args.text)
    try:
        if args.file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.file, "rb") as f:
                data = f.read()
    except OSError as exc:
        raise _UsageError(f"cannot read {args.file}: {exc.strerror or exc}") from exc
    if args.bytes:
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def _new_message(session: Session, body: str | bytes) -> Message:
    if isinstance(body, str):
        return session.create_text_message(body)
    msg = session.create_bytes_message()
    msg.write_bytes(body)
    return msg


def _cmd_send(args: argparse.Namespace) -> int:
    from ternmq import DeliveryMode, Session

    dest = _parse_destination(args.destination)
    props = [_parse_property(p) for p in args.property]
    reply_to = None if args.reply_to is None else _parse_destination(args.reply_to)
    body = _send_body(args)
    persistent = args.persistent is not False
    with _connected(args) as conn:
        session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.create_producer(dest)
        producer.delivery_mode = (
            DeliveryMode.PERSISTENT if persistent else DeliveryMode.NON_PERSISTENT
        )
        producer.priority = args.priority
        producer.time_to_live = args.ttl
        producer.delivery_delay = args.delay
        started = time.perf_counter()
        last_id = None
        sent = 0
        try:
            for _ in range(args.count):
                msg = _new_message(session, body)
                if args.correlation_id is not None:
                    msg.jms_correlation_id = args.correlation_id
                if reply_to is not None:
                    msg.jms_reply_to = reply_to
                if args.type is not None:
                    msg.jms_type = args.type
                for name, setter, value in props:
                    getattr(msg, setter)(name, value)
                producer.send(msg)
                last_id = msg.jms_message_id
                sent += 1
        except KeyboardInterrupt:
            last = f"; last id {last_id}" if last_id else ""
            raise _Interrupted(
                f"sent {sent} of {_plural(args.count, 'message')} to {dest}{last}"
            ) from None
        elapsed = time.perf_counter() - started
    details = ["persistent" if persistent else "non-persistent", f"priority {args.priority}"]
    if args.ttl:
        details.append(f"time to live {args.ttl:g} s")
    if args.delay:
        details.append(f"delivery delay {args.delay:g} s")
    print(
        f"sent {_plural(args.count, 'message')} to {dest} ({', '.join(details)}) "
        f"in {elapsed:.3f} s; last id {last_id}"
    )
    return 0


def _cmd_receive(args: argparse.Namespace) -> int:
    from ternmq import Session

    dest = _parse_destination(args.destination)
    wanted = args.count
    # Buffer no more than will be taken: whatever is left goes back to the queue untouched.
    prefetch = wanted if 0 < wanted < 100 else 100
    got = 0
    show = _message_json if args.json else _format_message
    with _connected(args, prefetch=prefetch) as conn:
        # Acknowledged one by one, once written out: a message that could not be printed (a
        # closed pipe, Ctrl-C) goes back to the destination when the session closes.
        session = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
        consumer = session.create_consumer(dest, args.selector or None)
        conn.start()
        try:
            while wanted == 0 or got < wanted:
                msg = consumer.receive(args.timeout)
                if msg is None:
                    break
                _write_out(show(msg))
                msg.acknowledge()
                got += 1
        except KeyboardInterrupt:
            raise _Interrupted(
                f"received {_plural(got, 'message')} from {dest}"
                + (f" of {wanted}" if wanted else "")
                + "; the one being received, if any, stays on the destination"
            ) from None
    waited = f"within {args.timeout:g} s"
    where = f"{dest}" + (f" matching {args.selector!r}" if args.selector else "")
    if not got:
        raise _CliError(f"no message arrived on {where} {waited}")
    if wanted and got < wanted:
        print(
            f"ternmq: received {got} of {wanted} messages; no more arrived on {where} {waited}",
            file=sys.stderr,
        )
    return 0


def _cmd_browse(args: argparse.Namespace) -> int:
    from ternmq import Queue, Session

    dest = _parse_destination(args.destination)
    if not isinstance(dest, Queue):
        raise _UsageError(f"{dest} is a topic: only queues can be browsed")
    shown = 0
    more = False
    with _connected(args) as conn:
        session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
        browser = session.create_browser(dest, args.selector or None)
        for msg in browser:
            if args.limit and shown >= args.limit:
                more = True
                break
            shown += 1
            print(_message_json(msg) if args.json else _format_message(msg))
        browser.close()
    summary = f"{_plural(shown, 'message')} on {dest}"
    if args.selector:
        summary += f" matching {args.selector!r}"
    if more:
        summary += " shown; the queue holds more (raise --limit, or 0 for all)"
    print(summary, file=sys.stderr if args.json else sys.stdout)
    return 0


def _stat_dict(d: DestinationStat) -> dict[str, object]:
    out: dict[str, object] = {f: getattr(d, f) for f in d.__struct_fields__}
    out["subscriptions"] = [
        {f: getattr(s, f) for f in s.__struct_fields__} for s in d.subscriptions
    ]
    return out


# The counter columns of ``ternmq stat`` (heading, DestinationStat field), in order; a
# subscription row fills the first three (depth, in flight, consumers).
_STAT_COLUMNS = (
    ("depth", "depth"),
    ("in-flight", "in_flight"),
    ("consumers", "consumers"),
    ("enqueued", "enqueued"),
    ("dequeued", "dequeued"),
    ("paged", "paged"),
    ("duplicates", "duplicates"),
)
_STAT_WIDE_COLUMNS = (
    ("scheduled", "scheduled"),
    ("memory", "memory_bytes"),
    ("expired", "expired"),
    ("dead-lettered", "dead_lettered"),
    ("redelivered", "redelivered"),
)


def _cmd_stat(args: argparse.Namespace) -> int:
    from ternmq.client import _admin

    dest = None if args.destination is None else _parse_destination(args.destination)
    with _connected(args) as conn:
        result = _admin.stat_result(conn, dest)
    stats = result.destinations
    _report_hidden(args, result.hidden, bool(stats), "destination", "them")
    if args.json:
        print(json.dumps([_stat_dict(d) for d in stats], indent=2))
        return 0
    # (heading, field) of every counter column; --wide adds the rest of the counters.
    columns = _STAT_COLUMNS + (_STAT_WIDE_COLUMNS if args.wide else ())
    header = ("destination", "kind", *(heading for heading, _ in columns))
    rows: list[tuple[str, ...]] = [header]
    for d in stats:
        rows.append((d.name, d.kind, *(str(getattr(d, field)) for _, field in columns)))
        for s in d.subscriptions:
            row = (f"  sub {s.name}", s.kind, str(s.depth), str(s.in_flight), str(s.consumers))
            rows.append(row + ("",) * (len(header) - len(row)))
    _print_table(rows, 2)
    if not stats:
        print("(no destinations)")
    return 0


def _report_hidden(args: argparse.Namespace, hidden: int, shown: bool, noun: str, on: str) -> None:
    """Say on stderr that ``hidden`` ``noun``s were left out for want of ``admin`` (on
    ``on``); with nothing ``shown``, fail with that."""
    if not hidden:
        return
    who = "an anonymous connection" if args.user is None else f"user {args.user!r}"
    note = (
        f"{_plural(hidden, noun)} not shown: {who} has no 'admin' permission on {on} "
        '(docs/operations.md, "Security")'
    )
    if not shown:
        raise _CliError(note)
    print(f"ternmq: {note}", file=sys.stderr)


def _print_records(
    args: argparse.Namespace,
    records: Sequence[ConnectionInfo | SubscriptionInfo],
    header: tuple[str, ...],
    left: int,
    row: Callable[[Any], tuple[str, ...]],
) -> None:
    """``records`` as one JSON object per line (``--json``), else as a table of ``header``
    and one ``row(record)`` each (the first ``left`` columns flush left)."""
    if args.json:
        for record in records:
            print(json.dumps({f: getattr(record, f) for f in record.__struct_fields__}))
        return
    _print_table([header, *(row(record) for record in records)], left)


def _print_table(rows: list[tuple[str, ...]], left: int) -> None:
    """``rows`` (the first is the header) in aligned columns: the first ``left`` columns
    flush left, the others (counters) flush right."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = [cell.ljust(w) for cell, w in zip(r[:left], widths[:left])]
        cells += [cell.rjust(w) for cell, w in zip(r[left:], widths[left:])]
        print("  ".join(cells).rstrip())


def _cmd_purge(args: argparse.Namespace) -> int:
    from ternmq.client import _admin

    dest = _parse_destination(args.destination)
    if dest.is_topic:
        raise _UsageError(f"{dest} is a topic: only queues can be purged")
    with _connected(args) as conn:
        removed = _admin.purge(conn, dest)
    print(f"purged {_plural(removed, 'message')} from {dest}")
    return 0


def _admin(conn: Connection) -> Admin:
    from ternmq.admin import Admin

    return Admin(conn)


def _queue_arg(text: str, what: str) -> Destination:
    dest = _parse_destination(text)
    if dest.is_topic:
        raise _UsageError(f"{dest} is a topic: {what} needs a queue (queue://NAME)")
    return dest


def _cmd_create_destination(args: argparse.Namespace) -> int:
    dest = _parse_destination(args.destination)
    with _connected(args) as conn:
        _admin(conn).create_destination(dest)
    print(f"created {dest}")
    return 0


def _cmd_delete_destination(args: argparse.Namespace) -> int:
    dest = _parse_destination(args.destination)
    with _connected(args) as conn:
        held = _admin(conn).delete_destination(dest, force=args.force)
    print(f"deleted {dest} ({_plural(held, 'message')} with it)")
    return 0


def _cmd_move(args: argparse.Namespace) -> int:
    source = _queue_arg(args.source, "move")
    target = _queue_arg(args.target, "move")
    with _connected(args) as conn:
        moved = _admin(conn).move(source, target, args.selector)
    what = f" matching {args.selector!r}" if args.selector else ""
    print(f"moved {_plural(moved, 'message')}{what} from {source} to {target}")
    return 0


def _cmd_delete_message(args: argparse.Namespace) -> int:
    dest = _queue_arg(args.destination, "delete-message")
    with _connected(args) as conn:
        _admin(conn).delete_message(dest, args.id)
    print(f"deleted message {args.id} from {dest}")
    return 0


def _connection_row(info: ConnectionInfo, own: str) -> tuple[str, ...]:
    when = datetime.datetime.fromtimestamp(info.connected_at / 1000, tz=datetime.UTC)
    return (
        info.id + (" (this)" if info.id == own else ""),
        info.protocol,
        info.user or "-",
        info.client_id or "-",
        info.address or "-",
        when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        str(info.sessions),
        str(info.consumers),
    )


def _cmd_connections(args: argparse.Namespace) -> int:
    with _connected(args) as conn:
        own = conn.connection_id
        infos = _admin(conn).connections()
    header = ("id", "protocol", "user", "client-id", "address", "connected", "sessions")
    _print_records(args, infos, (*header, "consumers"), 6, lambda info: _connection_row(info, own))
    return 0


def _by_id(act: Callable[[Admin, str], None], done: str) -> Callable[[argparse.Namespace], int]:
    """A command that does ``act(admin, ID)`` and then says ``done ID``."""

    def command(args: argparse.Namespace) -> int:
        with _connected(args) as conn:
            act(_admin(conn), args.id)
        print(f"{done} {args.id}")
        return 0

    return command


def _subscription_row(sub: SubscriptionInfo) -> tuple[str, ...]:
    kind = ("shared " if sub.shared else "") + ("durable" if sub.durable else "plain")
    return (sub.id, sub.topic, kind, sub.selector or "-", str(sub.consumers), str(sub.depth))


def _cmd_subscriptions(args: argparse.Namespace) -> int:
    with _connected(args) as conn:
        result = _admin(conn).subscription_list()
    subs = result.subscriptions
    _report_hidden(args, result.hidden, bool(subs), "subscription", "their topics")
    header = ("id", "topic", "kind", "selector", "consumers", "depth")
    _print_records(args, subs, header, 4, _subscription_row)
    if not subs and not args.json:
        print("(no subscriptions)")
    return 0


class _Bench:
    """Producers and consumers on their own connections and threads, and what they saw.

    Each worker thread writes only its own slot of the counters; the main thread reads them
    for progress and, after joining the workers, for the summary.
    """

    def __init__(self, args: argparse.Namespace, dest: Destination) -> None:
        self.args = args
        self.dest = dest
        self.stop = threading.Event()
        self.sent = [0] * args.producers
        self.received = [0] * args.consumers
        self.latencies: list[list[int]] = [[] for _ in range(args.consumers)]
        self.errors: list[str] = []
        self.started = 0.0
        self.last_send = 0.0
        self.last_receive = 0.0
        per = args.messages // args.producers
        self.shares = [
            per + (1 if i < args.messages % args.producers else 0) for i in range(args.producers)
        ]
        self.expected = args.messages * (args.consumers if args.topic else 1)

    def produce(self, index: int, conn: Connection) -> None:
        from ternmq import DeliveryMode, Session

        args = self.args
        try:
            session = conn.create_session(False, Session.AUTO_ACKNOWLEDGE)
            producer = session.create_producer(self.dest)
            producer.delivery_mode = (
                DeliveryMode.PERSISTENT if args.persistent else DeliveryMode.NON_PERSISTENT
            )
            payload = bytes(args.size)
            interval = args.producers / args.rate if args.rate else 0.0
            try:
                for k in range(self.shares[index]):
                    if self.stop.is_set():
                        return
                    if interval:
                        ahead = self.started + k * interval - time.perf_counter()
                        if ahead > 0:
                            time.sleep(ahead)
                    msg = session.create_bytes_message()
                    msg.write_bytes(payload)
                    msg.set_long_property(BENCH_PROPERTY, time.perf_counter_ns())
                    producer.send(msg)
                    self.sent[index] += 1
                    self.last_send = max(self.last_send, time.perf_counter())
            finally:
                session.close()  # waits for pipelined sends; raises a late refusal
        except JMSException as exc:
            self.errors.append(f"producer {index + 1}: {exc}")
            self.stop.set()

    def consume(self, index: int, consumer: MessageConsumer) -> None:
        lat = self.latencies[index]
        try:
            while not self.stop.is_set():
                msg = consumer.receive(0.1)
                if msg is None:
                    continue
                now = time.perf_counter_ns()
                lat.append(now - msg.get_long_property(BENCH_PROPERTY))
                self.received[index] += 1
                self.last_receive = max(self.last_receive, now / 1e9)
        except JMSException as exc:
            if not self.stop.is_set():
                self.errors.append(f"consumer {index + 1}: {exc}")
                self.stop.set()

    def progress_line(self, elapsed: float, tty: bool) -> str:
        got, sent = sum(self.received), sum(self.sent)
        rate = got / elapsed if elapsed > 0 else 0.0
        if not tty:
            return (
                f"bench: {elapsed:5.1f} s  sent {sent}/{self.args.messages}  "
                f"received {got}/{self.expected}  {rate:,.0f} msg/s"
            )
        width = 30
        filled = round(width * got / self.expected) if self.expected else width
        bar = "#" * filled + "." * (width - filled)
        pct = 100 * got / self.expected if self.expected else 100.0
        return f"\r[{bar}] {pct:5.1f}%  {got}/{self.expected}  {rate:,.0f} msg/s  {elapsed:.1f} s"


def _percentile(sorted_values: list[int], p: float) -> float:
    """Nearest-rank percentile of nanosecond values, in milliseconds."""
    if not sorted_values:
        return 0.0
    rank = max(0, min(len(sorted_values) - 1, math.ceil(p * len(sorted_values)) - 1))
    return sorted_values[rank] / 1e6


def _cmd_bench(args: argparse.Namespace) -> int:
    from ternmq import Queue, Session, Topic
    from ternmq.client import _admin

    name = args.destination or f"bench-{uuid.uuid4().hex[:8]}"
    dest: Destination
    try:
        dest = Topic(name) if args.topic else Queue(name)
    except JMSException as exc:
        raise _UsageError(str(exc)) from exc
    bench = _Bench(args, dest)
    block = True if args.blocking else None  # None: the URL's option, else pipelined
    conns: list[Connection] = []
    threads: list[threading.Thread] = []
    interrupted = False
    tty = sys.stderr.isatty()
    try:
        # Consumers first: a topic delivers only to subscriptions that exist when it publishes.
        consumers: list[MessageConsumer] = []
        for _ in range(args.consumers):
            conn = _open_connection(args.url, args.user, args.password, block=block)
            conns.append(conn)
            consumers.append(
                conn.create_session(False, Session.AUTO_ACKNOWLEDGE).create_consumer(dest)
            )
            conn.start()
        producer_conns = []
        for _ in range(args.producers):
            conn = _open_connection(args.url, args.user, args.password, block=block)
            conns.append(conn)
            producer_conns.append(conn)
        if args.persistent:
            mode = "persistent (each send waits for the broker's receipt)"
        elif conns[-1].block_np_sends:
            mode = "non-persistent, blocking (each send waits for the broker's receipt)"
        else:
            mode = "non-persistent, pipelined (sends do not wait for the broker's receipt)"
        print(
            f"bench: {args.messages} messages of {args.size} B to {dest}, "
            f"{_plural(args.producers, 'producer')}, {_plural(args.consumers, 'consumer')}, "
            f"{mode}" + (f", {args.rate:g} msg/s" if args.rate else ""),
            flush=True,
        )
        for i, consumer in enumerate(consumers):
            threads.append(threading.Thread(target=bench.consume, args=(i, consumer), daemon=True))
        bench.started = time.perf_counter()
        for i, conn in enumerate(producer_conns):
            threads.append(threading.Thread(target=bench.produce, args=(i, conn), daemon=True))
        for t in threads:
            t.start()
        deadline = bench.started + args.duration
        tick = 0.1 if tty else 1.0
        next_report = bench.started + tick
        try:
            while not bench.stop.is_set():
                now = time.perf_counter()
                if sum(bench.received) >= bench.expected or now >= deadline:
                    break
                if now >= next_report:
                    line = bench.progress_line(now - bench.started, tty)
                    print(line, end="" if tty else "\n", file=sys.stderr, flush=True)
                    next_report = now + tick
                time.sleep(min(0.02, max(0.0, deadline - now)))
        except KeyboardInterrupt:
            interrupted = True
        if tty:
            line = bench.progress_line(time.perf_counter() - bench.started, tty)
            print(line, file=sys.stderr, flush=True)
        bench.stop.set()
        for t in threads:
            t.join()
        for consumer in consumers:
            consumer.close()  # its prefetched messages go back to the queue...
        if not args.topic and sum(bench.received) < bench.expected and conns:
            try:
                _admin.purge(conns[0], dest)  # ...and are cleared away
            except JMSException:
                pass
    finally:
        bench.stop.set()
        for t in threads:
            if t.is_alive():
                t.join()
        for conn in conns:
            try:
                conn.close()
            except JMSException as exc:  # a pipelined send refused after the last send
                bench.errors.append(f"closing: {exc}")
    if bench.errors:
        raise _CliError("bench failed: " + "; ".join(bench.errors))
    sent, got = sum(bench.sent), sum(bench.received)
    send_time = max(bench.last_send - bench.started, 1e-9)
    receive_time = max(bench.last_receive - bench.started, 1e-9)
    mib = got * args.size / receive_time / (1 << 20)
    print(f"sent     {sent} in {send_time:.3f} s = {sent / send_time:,.0f} msg/s")
    print(
        f"received {got} in {receive_time:.3f} s = {got / receive_time:,.0f} msg/s "
        f"({mib:.2f} MiB/s)"
    )
    lat = sorted(x for part in bench.latencies for x in part)
    if lat:
        print(
            f"latency ms: p50 {_percentile(lat, 0.50):.3f}  p99 {_percentile(lat, 0.99):.3f}  "
            f"p999 {_percentile(lat, 0.999):.3f}  max {lat[-1] / 1e6:.3f}"
        )
    if interrupted:
        print("bench: interrupted; partial results", file=sys.stderr)
        return EXIT_INTERRUPTED
    if got < bench.expected:
        print(
            f"bench: stopped after --duration {args.duration:g} s with "
            f"{got} of {bench.expected} messages received",
            file=sys.stderr,
        )
    return 0


def _count(text: str) -> int:
    n = int(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return n


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text} is not 1 or more")
    return n


def _seconds(text: str) -> float:
    v = float(text)
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds (0 or more)")
    return v


def _rate(text: str) -> float:
    v = float(text)
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a rate in messages/s (0 or more)")
    return v


def _priority(text: str) -> int:
    n = int(text)
    if not 0 <= n <= 9:
        raise argparse.ArgumentTypeError(f"{text} is outside 0..9")
    return n


_count.__name__ = "count"  # argparse names the type in its error messages
_positive.__name__ = "positive count"
_seconds.__name__ = "seconds"
_priority.__name__ = "priority"
_rate.__name__ = "rate"


def _add_client_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the operator commands (``send`` ... ``bench``) on the ``ternmq`` parser."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--url",
        default=os.environ.get("TERNMQ_URL", DEFAULT_URL),
        help=f"broker URL (default: $TERNMQ_URL or {DEFAULT_URL}; vm://NAME for in-process)",
    )
    common.add_argument("--user", default=os.environ.get("TERNMQ_USER"), help="user name")
    common.add_argument(
        "--password",
        default=os.environ.get("TERNMQ_PASSWORD"),
        help="password (default: $TERNMQ_PASSWORD)",
    )
    dest_help = "queue://NAME or topic://NAME"

    p = sub.add_parser("send", parents=[common], help="send text or bytes messages")
    p.add_argument("destination", metavar="DEST", help=dest_help)
    body = p.add_mutually_exclusive_group(required=True)
    body.add_argument("--text", help="the message text")
    body.add_argument(
        "--file",
        metavar="PATH",
        help="send this file's content (- = standard input): a TextMessage if it is UTF-8, "
        "else a BytesMessage",
    )
    p.add_argument("--bytes", action="store_true", help="with --file: always a BytesMessage")
    p.add_argument("--correlation-id", help="JMSCorrelationID")
    p.add_argument("--reply-to", metavar="DEST", help="JMSReplyTo: queue://NAME or topic://NAME")
    p.add_argument("--type", help="JMSType")
    p.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="NAME[:TYPE]=VALUE",
        help="a message property, repeatable; TYPE is string (default), int, long, short, "
        "byte, bool, double or float: region=EU amount:int=5 urgent:bool=true",
    )
    p.add_argument("--count", type=_positive, default=1, help="messages to send (default 1)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--persistent",
        dest="persistent",
        action="store_true",
        default=None,
        help="PERSISTENT delivery (the default)",
    )
    mode.add_argument(
        "--non-persistent",
        dest="persistent",
        action="store_false",
        help="NON_PERSISTENT delivery",
    )
    p.add_argument("--priority", type=_priority, default=4, help="0..9 (default 4)")
    p.add_argument("--ttl", type=_seconds, default=0.0, help="time to live, s (0 = never expires)")
    p.add_argument("--delay", type=_seconds, default=0.0, help="delivery delay, s")

    p = sub.add_parser("receive", parents=[common], help="receive and print messages")
    p.add_argument("destination", metavar="DEST", help=dest_help)
    p.add_argument("--selector", help="a JMS message selector")
    p.add_argument(
        "--count",
        type=_count,
        default=1,
        help="messages to receive (default 1; 0 = until none arrives within --timeout)",
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=5.0,
        help="seconds to wait for each message (default 5)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per message and line")

    p = sub.add_parser("browse", parents=[common], help="show a queue's messages, not consuming")
    p.add_argument("destination", metavar="DEST", help="queue://NAME")
    p.add_argument("--selector", help="a JMS message selector")
    p.add_argument(
        "--limit", type=_count, default=100, help="messages to show (default 100; 0 = all)"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per message and line (the summary goes to stderr)",
    )

    p = sub.add_parser("stat", parents=[common], help="show destinations and their counters")
    p.add_argument("destination", metavar="DEST", nargs="?", help="only this destination")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument(
        "--wide",
        action="store_true",
        help="add columns: scheduled, memory bytes, expired, dead-lettered, redelivered",
    )

    p = sub.add_parser("purge", parents=[common], help="remove the waiting messages of a queue")
    p.add_argument("destination", metavar="DEST", help="queue://NAME")

    p = sub.add_parser("create-destination", parents=[common], help="create a queue or topic")
    p.add_argument("destination", metavar="DEST", help=dest_help)
    p = sub.add_parser(
        "delete-destination",
        parents=[common],
        help="delete a queue or topic with its messages (and a topic's subscriptions)",
    )
    p.add_argument("destination", metavar="DEST", help=dest_help)
    p.add_argument(
        "--force",
        action="store_true",
        help="close the connections that have consumers on it (else it is refused)",
    )
    p = sub.add_parser(
        "move",
        parents=[common],
        help="move a queue's waiting messages to another queue (dead-letter retry)",
    )
    p.add_argument("source", metavar="FROM", help="queue://NAME")
    p.add_argument("target", metavar="TO", help="queue://NAME")
    p.add_argument("--selector", help="move only the messages this JMS selector matches")
    p = sub.add_parser("delete-message", parents=[common], help="delete one message of a queue")
    p.add_argument("destination", metavar="DEST", help="queue://NAME")
    p.add_argument("id", metavar="ID", help="its JMSMessageID (as browse shows it)")
    # (list command, what it lists; the command that ends one by id, what that does)
    for listing, things, ender, effect in (
        (
            "connections",
            "connection",
            "close-connection",
            "close a connection (its unacknowledged messages go back)",
        ),
        (
            "subscriptions",
            "subscription",
            "delete-subscription",
            "delete a durable subscription (one without a consumer) and its messages",
        ),
    ):
        p = sub.add_parser(listing, parents=[common], help=f"list the {things}s")
        p.add_argument("--json", action="store_true", help=f"one JSON object per {things} and line")
        p = sub.add_parser(ender, parents=[common], help=effect)
        p.add_argument("id", metavar="ID", help=f"its id, as {listing} shows it")

    p = sub.add_parser("bench", parents=[common], help="measure throughput and latency")
    p.add_argument("--messages", type=_positive, default=10_000, help="messages (default 10000)")
    p.add_argument("--size", type=_count, default=256, help="body bytes (default 256)")
    p.add_argument("--producers", type=_positive, default=1, help="producers (default 1)")
    p.add_argument("--consumers", type=_positive, default=1, help="consumers (default 1)")
    p.add_argument("--persistent", action="store_true", help="PERSISTENT messages")
    p.add_argument(
        "--blocking",
        action="store_true",
        help="each NON_PERSISTENT send waits for the broker's receipt "
        "(block_on_non_persistent_send=true; default: pipelined)",
    )
    p.add_argument("--topic", action="store_true", help="a topic: every consumer gets each message")
    p.add_argument("--rate", type=_rate, default=0.0, help="msg/s over all producers (0 = max)")
    p.add_argument(
        "--duration", type=_seconds, default=30.0, help="stop after this, s (default 30)"
    )
    p.add_argument("--destination", metavar="NAME", help="queue/topic name (default: bench-RANDOM)")


_CLIENT_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "send": _cmd_send,
    "receive": _cmd_receive,
    "browse": _cmd_browse,
    "stat": _cmd_stat,
    "purge": _cmd_purge,
    "create-destination": _cmd_create_destination,
    "delete-destination": _cmd_delete_destination,
    "move": _cmd_move,
    "delete-message": _cmd_delete_message,
    "connections": _cmd_connections,
    "close-connection": _by_id(lambda admin, cid: admin.close_connection(cid), "closed connection"),
    "subscriptions": _cmd_subscriptions,
    "delete-subscription": _by_id(
        lambda admin, sid: admin.delete_subscription(sid), "deleted subscription"
    ),
    "bench": _cmd_bench,
}


def _run_client_command(args: argparse.Namespace) -> int:
    """Run an operator command; expected failures become one line on stderr."""
    try:
        code = _CLIENT_COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return code
    except _UsageError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except _CliError as exc:
        _error(str(exc))
        return EXIT_FAILURE
    except JMSException as exc:
        _error(str(exc) or type(exc).__name__)
        return EXIT_FAILURE
    except _Interrupted as exc:
        _error(f"interrupted: {exc}")
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_PIPE


def _quiet_stdout() -> None:
    """The reader of stdout went away (``| head``): end without a word, and point stdout at
    /dev/null so that the interpreter's last flush does not report the broken pipe."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (a test's capture): nothing will be flushed at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _passwd(from_stdin: bool) -> int:
    """``ternmq passwd``: print the hash of a password, for ``[users.NAME] password``."""
    import getpass

    from ternmq.server.security import hash_password

    try:
        if from_stdin:
            password = sys.stdin.readline().rstrip("\r\n")
        else:
            password = getpass.getpass("password: ")
            if getpass.getpass("again: ") != password:
                _error("the two passwords differ; nothing was hashed")
                return EXIT_USAGE
    except (EOFError, KeyboardInterrupt):
        _error("no password given")
        return EXIT_INTERRUPTED
    if not password:
        _error("an empty password cannot be hashed: give one")
        return EXIT_USAGE
    print(hash_password(password))
    return 0


def _pipeline_demo(argv: list[str]) -> int:
    """``ternmq pipeline-demo``: the example Spark pipeline (``ternmq.spark.pipeline_demo``)."""
    try:
        from ternmq.spark.pipeline_demo import main as demo_main
    except ImportError as exc:
        _error(
            f"the pipeline demo needs the spark extra ({exc}): pip install 'ternmq[spark]' "
            "(or make pipeline-demo)"
        )
        return EXIT_FAILURE
    if shutil.which("java") is None:
        _error("the pipeline demo needs Java 17 on PATH (apt-get install openjdk-17-jre-headless)")
        return EXIT_FAILURE
    return demo_main(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ternmq`` console script."""
    raw = sys.argv[1:] if argv is None else argv
    if raw[:1] == ["serve"]:  # the server has its own parser (ternmq.server.app.build_parser)
        from ternmq.server import main as serve_main

        return serve_main(raw[1:])
    if raw[:1] == ["pipeline-demo"]:  # needs the spark extra; its own parser
        return _pipeline_demo(raw[1:])
    parser = argparse.ArgumentParser(
        prog="ternmq", description="ternmq: a JMS 2.0 broker for Python"
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"ternmq {__version__} (Python {platform.python_version()}; {describe()})",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run a short tour on an embedded broker")
    pw = sub.add_parser(
        "passwd",
        help="hash a password for the server's config ([users.NAME] password = ...)",
        description="Hash a password (salted scrypt) for a [users.NAME] table of the server's "
        "config. It asks twice on a terminal; --stdin reads one line instead.",
    )
    pw.add_argument("--stdin", action="store_true", help="read the password from stdin")
    sub.add_parser("serve", help="run the network broker (see: ternmq serve --help)")
    sub.add_parser(
        "pipeline-demo", help="run the example Spark pipeline (needs ternmq[spark] and Java)"
    )
    _add_client_commands(sub)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "demo":
        return _demo()
    if args.command == "passwd":
        return _passwd(args.stdin)
    if args.command in _CLIENT_COMMANDS:
        return _run_client_command(args)
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
