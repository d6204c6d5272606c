"""HTTP/1.1 requests on kept-alive sockets, without a client library's per-request layers.

urllib3's ``urlopen`` (and ``http.client`` under it, whose header parsing goes through the
``email`` package) spent ~0.5 ms of Python per request of the bind path and the event writer
(py-spy at 1,000 nodes, issue 22: 11 % of the extender's samples for one Binding and one Event
per pod). What the API server's answers to our writes need is small: a status line, a few
headers, a body by ``Content-Length`` or chunked. So a request here is one ``sendall`` of the
bytes and a read of the answer by hand.

The sockets are opened by urllib3 (``new_socket``: the pool's ``_new_conn().connect()``, so TLS,
the CA, the client certificate, proxies of the generated client's configuration apply
unchanged); they are kept in a small LIFO pool. A socket that became readable while idle (the
server closed it: the API server closes idle connections after a while) is dropped before use;
a request on a reused socket that gets no answer byte at all is sent once more on a fresh one
(the server closed it while the request was on its way; our writes are safe to repeat: a
second Binding to the same node is a 409 the binder reads as bound, an Event is created once
more at worst).
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Callable, Mapping

MAX_HEAD = 64 * 1024
"""The longest answer head read (the API server's are a few hundred bytes)."""


class ProtocolError(OSError):
    """An answer that is not HTTP/1.1 as expected (an ``OSError``: the caller's connection
    failures)."""


class _NoAnswerError(OSError):
    """Nothing at all came back on a reused socket."""


class KeptAlive:
    """Requests to one server; thread-safe (a socket is used by one request at a time)."""

    def __init__(self, new_socket: Callable[[], socket.socket], host_header: str, *,
                 timeout: float, keep: int) -> None:
        self._new_socket = new_socket
        self._host = host_header.encode("ascii")
        self._timeout = timeout
        self._keep = keep
        self._idle: list[socket.socket] = []
        self._lock = threading.Lock()
        self.opened = 0
        """Sockets opened so far (a test reads it; one per concurrent request in a steady
        state)."""

    def request(self, method: str, path: str, body: bytes,
                headers: Mapping[str, str]) -> tuple[int, bytes]:
        """(status, body) of one request; raises ``OSError`` when the server cannot be
        reached or answers something that is not HTTP."""
        head = [f"{method} {path} HTTP/1.1".encode("ascii"), b"Host: " + self._host]
        head += [f"{name}: {value}".encode("latin-1") for name, value in headers.items()]
        head.append(b"Content-Length: %d" % len(body))
        data = b"\r\n".join(head) + b"\r\n\r\n" + body
        sock, reused = self._take()
        try:
            answer = _exchange(sock, data)
        except _NoAnswerError as exc:
            _close(sock)
            if not reused:
                raise ProtocolError("the server closed the connection without an "
                                    "answer") from exc
            sock = self._open()
            try:
                answer = _exchange(sock, data)
            except BaseException:
                _close(sock)
                raise
        except BaseException:
            _close(sock)
            raise
        status, payload, keep_open = answer
        if keep_open:
            self._give_back(sock)
        else:
            _close(sock)
        return status, payload

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for sock in idle:
            _close(sock)

    def _take(self) -> tuple[socket.socket, bool]:
        while True:
            with self._lock:
                sock = self._idle.pop() if self._idle else None
            if sock is None:
                return self._open(), False
            if _still_open(sock):
                return sock, True
            _close(sock)

    def _open(self) -> socket.socket:
        sock = self._new_socket()
        sock.settimeout(self._timeout)
        self.opened += 1
        return sock

    def _give_back(self, sock: socket.socket) -> None:
        with self._lock:
            if len(self._idle) < self._keep:
                self._idle.append(sock)
                return
        _close(sock)


def _exchange(sock: socket.socket, data: bytes) -> tuple[int, bytes, bool]:
    """Send ``data``, read one answer: (status, body, whether the socket stays open)."""
    try:
        sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError) as exc:  # closed while it was idle
        raise _NoAnswerError(str(exc)) from exc
    reader = _Reader(sock)
    head = reader.until(b"\r\n\r\n", MAX_HEAD)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ProtocolError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
    fields: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    status = int(parts[1])
    if "chunked" in fields.get("transfer-encoding", "").lower():
        body = reader.chunked()
    elif "content-length" in fields:
        body = reader.exactly(int(fields["content-length"]))
    elif status in (204, 304) or 100 <= status < 200:
        body = b""
    else:  # until the server closes
        return status, reader.rest(), False
    keep_open = fields.get("connection", "").lower() != "close" and parts[0] != "HTTP/1.0"
    return status, body, keep_open


class _Reader:
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = bytearray()
        self._started = False

    def _more(self) -> None:
        chunk = self._sock.recv(65536)
        if not chunk:
            if not self._started:
                raise _NoAnswerError("closed before any answer byte")
            raise ProtocolError("the server closed the connection inside an answer")
        self._started = True
        self._buffer += chunk

    def until(self, marker: bytes, limit: int) -> bytes:
        while (at := self._buffer.find(marker)) < 0:
            if len(self._buffer) > limit:
                raise ProtocolError(f"answer head over {limit} bytes")
            try:
                self._more()
            except ConnectionResetError as exc:
                if self._started:
                    raise
                raise _NoAnswerError(str(exc)) from exc
        out = bytes(self._buffer[:at])
        del self._buffer[:at + len(marker)]
        return out

    def exactly(self, n: int) -> bytes:
        while len(self._buffer) < n:
            self._more()
        out = bytes(self._buffer[:n])
        del self._buffer[:n]
        return out

    def chunked(self) -> bytes:
        out = bytearray()
        while True:
            size_line = self.until(b"\r\n", 1024).split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError as exc:
                raise ProtocolError(f"bad chunk size {size_line[:20]!r}") from exc
            if size == 0:
                while self.until(b"\r\n", MAX_HEAD):  # trailers, then the blank line
                    pass
                return bytes(out)
            out += self.exactly(size)
            self.exactly(2)  # the chunk's CRLF

    def rest(self) -> bytes:
        while True:
            chunk = self._sock.recv(65536)
            if not chunk:
                return bytes(self._buffer)
            self._buffer += chunk


def _still_open(sock: socket.socket) -> bool:
    """An idle kept-alive socket is readable only when the server closed it (or sent
    something unasked): then it cannot be used."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()
