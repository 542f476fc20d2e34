"""The ``ternmq`` command line.

``ternmq demo`` runs a short, self-contained tour: an embedded broker, a producer, a
selective consumer, a browser, a topic with two subscribers, and the binary encoding of a
message. The network server (``ternmq serve``) arrives with the network broker.
"""

from __future__ import annotations

import argparse
import sys
import uuid


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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ternmq`` console script."""
    raw = sys.argv[1:] if argv is None else argv
    if raw[:1] == ["serve"]:  # the server has its own parser (ternmq.server.app.build_parser)
        from ternmq.server import main as serve_main

        return serve_main(raw[1:])
    parser = argparse.ArgumentParser(
        prog="ternmq", description="ternmq: a JMS 2.0 broker for Python"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="run a short tour on an embedded broker")
    sub.add_parser("serve", help="run the network broker (see: ternmq serve --help)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "demo":
        return _demo()
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
