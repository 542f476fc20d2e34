"""A fake network for failover tests: a TCP proxy on 127.0.0.1 that tests can cut, point at
another server, or make swallow the bytes of one direction.

``Proxy(target_port)`` listens on port 0 (``proxy.port``); each accepted client gets its own
connection to the target, and two threads copy bytes. ``cut()`` closes every current pair (as
a network failure would: both ends see the stream end), ``retarget(port)`` sends new clients
elsewhere, ``drop_up``/``drop_down`` discard client->server / server->client bytes (a request
that never arrives, or a reply that never comes back), ``refuse`` closes new clients at once.
"""

from __future__ import annotations

import socket
import struct
import threading
import time

__all__ = ["Proxy"]


class Proxy:
    """A cuttable TCP proxy to ``127.0.0.1:target_port``."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.drop_up = False
        self.drop_down = False
        self.refuse = False
        self.dropped = 0  # bytes discarded so far
        self.accepted = 0  # clients accepted so far
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._closed = False
        self._resetting = False
        threading.Thread(target=self._accept_loop, name="test-proxy", daemon=True).start()

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            if self.refuse:
                client.close()
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()  # the broker is down: the client sees the stream end
                continue
            server.settimeout(None)
            with self._lock:
                self._pairs.append((client, server))
            threading.Thread(target=self._copy, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._copy, args=(server, client, False), daemon=True).start()

    def _copy(self, src: socket.socket, dst: socket.socket, up: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if self.drop_up if up else self.drop_down:
                    self.dropped += len(data)
                    continue
                dst.sendall(data)
        except OSError:
            pass
        if self._resetting:
            return
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        """Break every current link (both directions), as a failed network would."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for s in pair:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def reset(self) -> None:
        """Break every current link with a TCP reset to the client (``SO_LINGER`` 0): its
        next read or write fails at once, without the orderly end of stream of :meth:`cut`."""
        self._resetting = True  # the copy threads end without an orderly shutdown
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for client, server in pairs:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.shutdown(socket.SHUT_RD)  # wakes its copy thread; sends nothing
            server.shutdown(socket.SHUT_RDWR)
        time.sleep(0.1)  # the copy threads let go of the sockets: close() then resets
        for client, server in pairs:
            client.close()
            server.close()
        self._resetting = False

    def retarget(self, port: int) -> None:
        """Send clients accepted from now on to ``port``."""
        self.target_port = port

    def wait_dropped(self, timeout: float = 10.0) -> None:
        """Wait until some bytes were discarded (a request or reply is "in flight")."""
        deadline = time.monotonic() + timeout
        while self.dropped == 0:
            if time.monotonic() > deadline:
                raise AssertionError("nothing reached the proxy to drop")
            time.sleep(0.01)

    def close(self) -> None:
        """Stop accepting and cut every link."""
        self._closed = True
        self._listener.close()
        self.cut()
