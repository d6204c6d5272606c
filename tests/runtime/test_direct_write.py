"""The worker's direct answer to a client that reads slowly (``runtime.worker``): the event
loop writes what the socket takes without blocking, a pool thread writes the rest, and the
connection then goes back to the kept-alive poller. A real socket pair; the worker is gunicorn's
object without its arbiter (the fields the direct path uses)."""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from types import SimpleNamespace
from typing import Any

from extender.runtime.direct import DirectRequest, response_bytes
from extender.runtime.worker import HeadDeadlineWorker

ANSWER = b'"' + b"x" * (4 << 20) + b'"'  # 4 MiB: more than the socket buffers take at once


class Route:
    inline = True
    max_body_bytes = 100
    body_read_timeout_s = 30.0

    def answer_body(self, body: bytes) -> tuple[int, bytes]:
        return 200, ANSWER

    def answer_late(self, received: int, length: int) -> tuple[int, bytes]:
        return 408, b"{}"

    def after_answer(self) -> None:
        pass


class Deferred:
    """gunicorn's method queue: callbacks for the event loop (run here by the test)."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def defer(self, callback: Any, *args: Any) -> None:
        self.calls.append(partial(callback, *args))


def worker() -> Any:
    w: Any = HeadDeadlineWorker.__new__(HeadDeadlineWorker)
    w.nr, w.max_requests, w.alive, w.nr_conns = 0, 1 << 30, True, 1
    w.tpool, w.method_queue = ThreadPoolExecutor(1), Deferred()
    w.keepalived_conns, w.poller = deque(), selectors.DefaultSelector()
    w.cfg = SimpleNamespace(keepalive=2)
    w._heads, w._bodies = {}, {}
    return w


def test_a_slow_reader_gets_its_whole_answer_from_a_pool_thread() -> None:
    server, client = socket.socketpair()
    server.setblocking(False)
    conn: Any = SimpleNamespace(sock=server, client="test", timeout=None, parser=None)
    conn.set_timeout = lambda: None
    w = worker()
    request = DirectRequest(Route(), body_start=0, length=2, close=False)
    w._serve_direct(conn, request, bytearray(b"{}"))
    # the event loop did not block: it returned with most of the answer still to write
    assert not w.method_queue.calls
    expected = response_bytes(200, ANSWER, close=False)
    received = bytearray()

    def read() -> None:
        while len(received) < len(expected):
            received.extend(client.recv(1 << 16))

    reader = threading.Thread(target=read)
    reader.start()
    reader.join(60)
    assert bytes(received) == expected
    deadline = time.monotonic() + 30
    while not w.method_queue.calls:  # the pool thread's done callback
        assert time.monotonic() < deadline
        time.sleep(0.01)
    w.method_queue.calls[0]()  # what the event loop runs next
    assert list(w.keepalived_conns) == [conn]
    assert w.poller.get_key(server) is not None
    w.tpool.shutdown()
    server.close()
    client.close()


def test_the_work_after_an_answer_runs_once_the_client_has_it() -> None:
    """``after_answer`` (``scheduling.warm``): on the event loop, after the whole answer is
    on the socket, before the connection goes back to the poller for the next request."""
    server, client = socket.socketpair()
    server.setblocking(False)
    conn: Any = SimpleNamespace(sock=server, client="test", timeout=None, parser=None)
    conn.set_timeout = lambda: None
    w = worker()
    expected = response_bytes(200, b"{}", close=False)
    seen: list[bytes] = []

    class Small(Route):
        def answer_body(self, body: bytes) -> tuple[int, bytes]:
            return 200, b"{}"

        def after_answer(self) -> None:
            client.settimeout(5)
            seen.append(client.recv(1 << 16))  # already there: sent before this ran
            seen.append(b"kept" if conn in w.keepalived_conns else b"not kept")

    w._serve_direct(conn, DirectRequest(Small(), body_start=0, length=2, close=False),
                    bytearray(b"{}"))
    assert seen == [expected, b"kept"]
