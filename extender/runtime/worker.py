"""gunicorn's threaded worker, with a deadline on every request head: no thread before the head.

gunicorn's ``gthread`` worker hands a new connection to a pool thread as soon as one byte is
readable; the thread then does the TLS handshake (``TConn.init``) and reads the request line
and headers with a blocking socket and no deadline. A client that sends half a ClientHello or
half a request line and stops keeps that thread forever, and as many such clients as there
are threads freeze the port (issue 19, finding 6: 8 sockets froze ``serve``, 4 the webhook).

``HeadDeadlineWorker`` changes the acceptance model, as nginx and Go's ``ReadHeaderTimeout``
do: the worker's event loop (the one thread that already polls the listeners and the
kept-alive connections) does the TLS handshake and reads the request head itself, without
blocking, and a connection gets a pool thread only once its whole head (through the blank line
that ends the headers) is in hand. Stalled sockets cost a file descriptor and a small buffer,
never a thread; each is closed when its deadline passes:

- a new connection: ``head_timeout`` seconds from ``accept`` for the handshake (client
  certificate included) and the first request's head;
- a kept-alive connection: idle under gunicorn's ``keepalive`` timeout as before, then
  ``head_timeout`` seconds from the first byte of its next request;
- a head larger than ``MAX_HEAD_BYTES`` is answered 431 and closed.

The body is the application's business (``server/app.py`` reads it with its own deadline,
``--body-read-timeout``). The deadline is checked by the event loop about once a second, so a
stalled socket lives ``head_timeout`` to ``head_timeout + 1`` seconds.

**Direct routes** (``runtime.direct``): when the app offers them, a request on one whose head
is the plain shape kube-scheduler's Go client sends skips gunicorn's parser, environ and
response object: the event loop reads its body too (without blocking, under the route's body
deadline: a late body is answered 408 and closed), then the route answers it on the event
loop's thread (``inline``: filter, prioritize) or on a pool thread (bind), and the answer goes
out in one write; the connection then goes back to the kept-alive poller as gunicorn's own
requests do. A stopping worker, the access log, a full keep-alive list or any other head send
the request through gunicorn as before.

This subclasses gunicorn 27's ``ThreadWorker`` (``accept``, ``enqueue_req``, ``murder_pending``
and ``TConn``'s fields), hence the pin ``gunicorn>=27,<28`` in ``pyproject.toml``; the test
``tests/runtime/test_head_deadline.py`` drives it under real gunicorn.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import selectors
import socket
import ssl
import time
from concurrent import futures
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gunicorn import http
from gunicorn import sock as gunicorn_sock
from gunicorn.workers.gthread import STOP_KEEPALIVE_LINGER, TConn, ThreadWorker

from extender.runtime.background import yield_on_wakeup
from extender.runtime.command import DEFAULT_HEAD_TIMEOUT_S
from extender.runtime.direct import (
    DirectRequest,
    DirectRoute,
    direct_routes,
    parse_direct,
    response_bytes,
)

_log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 64 * 1024
"""The longest request head accepted (our verbs' heads are a few hundred bytes; gunicorn's own
limits, 4 KiB per line, are checked by its parser once the head is handed over)."""

_TOO_LARGE_BODY = b'{"Error": "431: the request head is over %d bytes"}' % MAX_HEAD_BYTES
_TOO_LARGE = (b"HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n"
              b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
              % (len(_TOO_LARGE_BODY), _TOO_LARGE_BODY))
_END_OF_HEAD = (b"\r\n\r\n", b"\n\n")


@dataclass
class _Head:
    """A connection whose request head is being read by the event loop."""

    conn: TConn
    deadline: float
    handshaking: bool
    data: bytearray = field(default_factory=bytearray)
    events: int = 0
    """What the poller waits for (0: not registered)."""
    direct: DirectRequest | None = None
    """Set once the head is a direct route's: then the body is being read."""


class _Progress:
    DONE = "done"
    READ = "read"
    WRITE = "write"
    CLOSED = "closed"
    TOO_LARGE = "too large"


class HeadDeadlineWorker(ThreadWorker):  # type: ignore[misc]
    """``worker_class`` for every gunicorn process here (``runtime.gunicorn``)."""

    alive: bool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_timeout_s = float(getattr(self.app, "head_timeout_s", DEFAULT_HEAD_TIMEOUT_S))
        self._heads: dict[TConn, _Head] = {}
        """Insertion order is deadline order (one timeout for all): the oldest first."""
        self._bodies: dict[TConn, _Head] = {}
        """Direct requests whose body is being read; deadline order as ``_heads``."""
        self._stop_by: float | None = None
        self._direct: dict[bytes, DirectRoute] = {}

    def get_thread_pool(self) -> futures.ThreadPoolExecutor:
        """gunicorn's pool, whose threads never preempt the event loop on waking
        (``runtime.background``): the loop answers the inline routes, the pool what can wait
        a moment (bind, gunicorn's own requests)."""
        return futures.ThreadPoolExecutor(max_workers=self.cfg.threads,
                                          initializer=yield_on_wakeup)

    def run(self) -> None:
        # the app is loaded by now (init_process); the access log needs gunicorn's request
        if self.cfg.accesslog is None and self.cfg.keepalive:
            self._direct = dict(direct_routes(self.wsgi))
        super().run()

    # -- the event loop's side (gunicorn calls these on its main thread) ------------------

    def accept(self, listener: socket.socket) -> None:
        try:
            client, address = listener.accept()
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        conn = TConn(self.cfg, client, address, listener.getsockname())  # non-blocking
        if self.cfg.is_ssl:
            try:
                conn.sock = gunicorn_sock.ssl_context(self.cfg).wrap_socket(
                    conn.sock, server_side=True, do_handshake_on_connect=False,
                    suppress_ragged_eofs=self.cfg.suppress_ragged_eofs)
            except (OSError, ssl.SSLError, ValueError) as exc:
                _log.warning("TLS context unavailable; connection closed",
                             extra={"fields": {"error": str(exc)}})
                self._drop(conn)
                return
        conn.initialized = True  # TConn.init's work (wrap, parser) is done here, not in a thread
        self._start_head(conn, handshaking=self.cfg.is_ssl)

    def enqueue_req(self, conn: TConn) -> None:
        """gunicorn's path to a thread (a kept-alive connection became readable, or bytes of
        the next request are buffered): the head is read here first."""
        self._start_head(conn, handshaking=False)

    def murder_pending(self) -> None:
        """Close heads past their deadline; once the worker stops, every head gets at most
        gunicorn's ``STOP_KEEPALIVE_LINGER`` more (a request being sent may still finish, a
        stalled one does not hold the shutdown for its whole timeout)."""
        super().murder_pending()
        now = time.monotonic()
        if not self.alive and self._stop_by is None:
            self._stop_by = now + STOP_KEEPALIVE_LINGER
        while self._heads:
            head = next(iter(self._heads.values()))
            deadline = head.deadline if self._stop_by is None else min(head.deadline,
                                                                       self._stop_by)
            if deadline > now:
                break
            _log.debug("request head not received in time; connection closed",
                       extra={"fields": {"client": str(head.conn.client),
                                         "handshaking": head.handshaking,
                                         "bytes": len(head.data)}})
            self._finish(head)
            self._drop(head.conn)
        while self._bodies:
            head = next(iter(self._bodies.values()))
            deadline = head.deadline if self._stop_by is None else min(head.deadline,
                                                                       self._stop_by)
            if deadline > now or head.direct is None:
                break
            self._finish(head)
            request = head.direct
            status, body = request.route.answer_late(len(head.data) - request.body_start,
                                                     request.length)
            with contextlib.suppress(OSError, ssl.SSLError):
                head.conn.sock.send(response_bytes(status, body, close=True))
            self._drop(head.conn)

    # -- head reading ----------------------------------------------------------------------

    def _start_head(self, conn: TConn, *, handshaking: bool, buffered: bytes = b"") -> None:
        if conn.parser is not None:
            buffered += conn.parser.unreader.take_buffered()
        head = _Head(conn, time.monotonic() + self.head_timeout_s, handshaking,
                     bytearray(buffered))
        self._heads[conn] = head
        conn.sock.setblocking(False)
        self._advance(head)

    def _on_event(self, head: _Head, _fileobj: Any) -> None:
        self._advance(head)

    def _advance(self, head: _Head) -> None:
        progress = self._read(head)
        if progress == _Progress.DONE and head.direct is None and self._direct:
            head.direct = self._direct_request(head)
            if head.direct is not None and len(head.data) < head.direct.end:
                # the body is still arriving: read on, under the route's body deadline
                self._heads.pop(head.conn, None)
                head.deadline = time.monotonic() + head.direct.route.body_read_timeout_s
                self._bodies[head.conn] = head
                progress = self._read(head)
        if progress == _Progress.DONE:
            self._finish(head)
            if head.direct is not None:
                self._serve_direct(head.conn, head.direct, head.data)
            else:
                self._dispatch(head)
        elif progress in (_Progress.READ, _Progress.WRITE):
            wanted = selectors.EVENT_READ if progress == _Progress.READ else selectors.EVENT_WRITE
            if head.events == 0:
                self.poller.register(head.conn.sock, wanted, partial(self._on_event, head))
            elif head.events != wanted:
                self.poller.modify(head.conn.sock, wanted, partial(self._on_event, head))
            head.events = wanted
        else:
            self._finish(head)
            if progress == _Progress.TOO_LARGE:
                with contextlib.suppress(OSError, ssl.SSLError):
                    head.conn.sock.send(_TOO_LARGE)
            self._drop(head.conn)

    def _read(self, head: _Head) -> str:
        if not head.handshaking and self._complete(head):
            return _Progress.DONE
        sock = head.conn.sock
        try:
            if head.handshaking:
                sock.do_handshake()
                head.handshaking = False
            while True:
                chunk = sock.recv(16384)
                if not chunk:
                    return _Progress.CLOSED
                head.data += chunk
                if self._complete(head):
                    return _Progress.DONE
                if head.direct is None and len(head.data) > MAX_HEAD_BYTES:
                    return _Progress.TOO_LARGE
        except ssl.SSLWantReadError:
            return _Progress.READ
        except ssl.SSLWantWriteError:
            return _Progress.WRITE
        except BlockingIOError:
            return _Progress.READ
        except (OSError, ssl.SSLError) as exc:  # reset, bad handshake, untrusted client cert
            _log.debug("connection failed before its request",
                       extra={"fields": {"client": str(head.conn.client), "error": str(exc)}})
            return _Progress.CLOSED

    @staticmethod
    def _complete(head: _Head) -> bool:
        return len(head.data) >= head.direct.end if head.direct is not None \
            else _complete(head.data)

    def _finish(self, head: _Head) -> None:
        """No longer waiting for this head: off the poller and the deadline list."""
        self._heads.pop(head.conn, None)
        self._bodies.pop(head.conn, None)
        if head.events:
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.poller.unregister(head.conn.sock)
            head.events = 0

    def _dispatch(self, head: _Head) -> None:
        """The whole head is here: parse and answer it on a pool thread."""
        conn = head.conn
        conn.sock.setblocking(True)
        if conn.parser is None:
            conn.parser = http.get_parser(self.cfg, conn.sock, conn.client)
        conn.parser.unreader.unread(bytes(head.data))
        conn.data_ready = True
        ThreadWorker.enqueue_req(self, conn)

    def _drop(self, conn: TConn) -> None:
        self.nr_conns -= 1
        conn.close()

    # -- direct routes (runtime.direct) ------------------------------------------------------

    def _direct_request(self, head: _Head) -> DirectRequest | None:
        """The head's direct request, if it is one and this worker may answer it itself
        (alive, room on the keep-alive list: otherwise gunicorn answers, closing)."""
        if not self.alive or len(self.keepalived_conns) >= self.max_keepalived:
            return None
        return parse_direct(head.data, self._direct)

    def _serve_direct(self, conn: TConn, request: DirectRequest, data: bytearray) -> None:
        body = bytes(data[request.body_start:request.end])
        rest = bytes(data[request.end:])  # a pipelined next request
        self.nr += 1
        close = request.close
        if self.nr >= self.max_requests:
            if self.alive:
                self.log.info("Autorestarting worker after current request.")
                self.alive = False
            close = True
        if request.route.inline:
            status, answer = request.route.answer_body(body)
            payload = response_bytes(status, answer, close=close)
            try:
                sent = conn.sock.send(payload)  # non-blocking: never stalls the event loop
            except (BlockingIOError, ssl.SSLWantWriteError):
                sent = 0
            except (OSError, ssl.SSLError):
                self._drop(conn)
                return
            if sent == len(payload):
                self._after_direct(conn, not close, rest)
                # before the loop takes the next request: kube-scheduler is busy with its
                # own filters for the next pod now
                request.route.after_answer()
                return
            # the client reads slowly: a pool thread writes the rest, under the deadline
            future = self.tpool.submit(self._send, conn, request.route, payload[sent:], close)
            request.route.after_answer()
        else:
            future = self.tpool.submit(self._answer_direct, conn, request.route, body, close)
        future.add_done_callback(lambda done: self.method_queue.defer(
            self._after_direct, conn,
            not done.cancelled() and done.exception() is None and done.result(), rest))

    def _answer_direct(self, conn: TConn, route: DirectRoute, body: bytes, close: bool
                       ) -> bool:
        """Answer and write the answer (a pool thread); whether the connection stays."""
        status, answer = route.answer_body(body)
        kept = self._send(conn, route, response_bytes(status, answer, close=close), close)
        route.after_answer()
        return kept

    @staticmethod
    def _send(conn: TConn, route: DirectRoute, payload: bytes, close: bool) -> bool:
        try:
            conn.sock.settimeout(route.body_read_timeout_s)
            conn.sock.sendall(payload)
        except (OSError, ssl.SSLError) as exc:
            _log.debug("answer not sent", extra={"fields": {"client": str(conn.client),
                                                            "error": str(exc)}})
            return False
        return not close

    def _after_direct(self, conn: TConn, keep: bool, rest: bytes) -> None:
        """On the event loop: the connection back to the kept-alive poller, or closed."""
        if not keep:
            self._drop(conn)
        elif rest:
            # the next request, from the event loop's queue: a nested call here would recurse
            # once per request of a deep pipeline
            self.method_queue.defer(partial(self._start_head, conn, handshaking=False,
                                            buffered=rest))
        else:
            conn.sock.setblocking(False)
            conn.set_timeout()
            if not self.alive:
                conn.timeout = min(conn.timeout, time.monotonic() + STOP_KEEPALIVE_LINGER)
            self.keepalived_conns.append(conn)
            self.poller.register(conn.sock, selectors.EVENT_READ,
                                 partial(self.on_client_socket_readable, conn))


def _complete(data: bytearray) -> bool:
    """The blank line that ends the headers is here (empty lines before the request line, which
    HTTP/1.1 servers skip, do not count)."""
    start = len(data) - len(data.lstrip(b"\r\n"))
    return any(data.find(end, start) >= 0 for end in _END_OF_HEAD)
