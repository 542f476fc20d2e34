"""Fill a queue to 10x its memory limit and drain it, printing resident memory (bytes).

Run by test_memory.py in a subprocess: ``python _memory_worker.py DATA_DIR LIMIT SIZE``.
Prints one line ``baseline peak_fill peak_drain drained_in_order`` at the end.
"""

from __future__ import annotations

import os
import sys
import uuid

from ternmq import ConnectionFactory, EmbeddedBroker, Queue, Session

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def main() -> None:
    data_dir, limit, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    count = 10 * limit // size
    body = b"\x00" * size
    with EmbeddedBroker(f"mem-{uuid.uuid4().hex[:6]}", data_dir, max_bytes=limit) as broker:
        factory = ConnectionFactory(broker.url)
        q = Queue("deep")
        with factory.create_connection() as conn:
            conn.start()
            tx = conn.create_session(True)
            producer = tx.create_producer(q)
            consumer_session = conn.create_session(False, Session.CLIENT_ACKNOWLEDGE)
            # Warm up every code path once, then take the baseline.
            for _ in range(3):
                m = tx.create_bytes_message()
                m.write_bytes(body)
                producer.send(m)
            tx.commit()
            warm = consumer_session.create_consumer(q)
            for _ in range(3):
                got = warm.receive(2.0)
                assert got is not None
            got.acknowledge()
            warm.close()
            baseline = rss()
            peak_fill = baseline
            for i in range(count):
                m = tx.create_bytes_message()
                m.write_bytes(body)
                m.set_int_property("i", i)
                producer.send(m, priority=9 if i % 100 == 0 else 4)
                if i % 50 == 49:
                    tx.commit()
                    peak_fill = max(peak_fill, rss())
            tx.commit()
            peak_fill = max(peak_fill, rss())
            consumer = consumer_session.create_consumer(q)
            order = []
            peak_drain = baseline
            while (m := consumer.receive(2.0)) is not None:
                order.append(m.get_int_property("i"))
                if len(order) % 50 == 0:
                    m.acknowledge()
                    peak_drain = max(peak_drain, rss())
            m_last = order
            consumer_session.acknowledge()
            expected = [i for i in range(count) if i % 100 == 0]
            expected += [i for i in range(count) if i % 100 != 0]
            print(baseline, peak_fill, peak_drain, int(m_last == expected), count, flush=True)


if __name__ == "__main__":
    main()
