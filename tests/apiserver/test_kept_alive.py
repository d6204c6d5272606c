"""``apiserver.kept_alive`` against a scripted server on a real socket: each accepted connection
answers the requests on it with the next scripted replies, then does what the script says
(stay open, or close)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from extender.apiserver.kept_alive import KeptAlive, ProtocolError

OK = (b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
      b'{"kind":"x"}')
"""Content-Length 11: the answer's body is the first 11 bytes of what follows."""
CHUNKED = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"4\r\n{\"a\"\r\n5;ext=1\r\n:1234\r\n1\r\n}\r\n0\r\nTrailer: x\r\n\r\n")
CLOSING = b"HTTP/1.1 409 Conflict\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"


class Scripted:
    """Connection i answers its requests with ``scripts[i]`` (one reply per request; the
    reply ``None`` closes the connection instead of answering)."""

    def __init__(self, scripts: list[list[bytes | None]]) -> None:
        self.scripts = scripts
        self.requests: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        for script in self.scripts:
            conn, _ = self.listener.accept()
            threading.Thread(target=self._answer, args=(conn, script), daemon=True).start()

    def _answer(self, conn: socket.socket, script: list[bytes | None]) -> None:
        with conn:
            for reply in script:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                while len(body) < length:
                    body += conn.recv(65536)
                self.requests.append(head + b"\r\n\r\n" + body)
                if reply is None:
                    return
                conn.sendall(reply)
            time.sleep(0.5)  # then closed: a later request on it finds it gone

    def client(self) -> KeptAlive:
        return KeptAlive(lambda: socket.create_connection(("127.0.0.1", self.port)),
                         f"127.0.0.1:{self.port}", timeout=5, keep=4)


@pytest.fixture
def close_listeners() -> Iterator[list[Scripted]]:
    servers: list[Scripted] = []
    yield servers
    for server in servers:
        server.listener.close()


@pytest.mark.parametrize(("reply", "status", "body"), [
    (OK, 201, b'{"kind":"x"'),  # by Content-Length: 11 bytes, whatever follows
    (CHUNKED, 200, b'{"a":1234}'),  # 4 + 5 + 1 bytes, a chunk extension and a trailer
    (CLOSING, 409, b"{}"),
])
def test_answers_are_read_by_length_or_chunks(close_listeners: list[Scripted], reply: bytes,
                                              status: int, body: bytes) -> None:
    server = Scripted([[reply]])
    close_listeners.append(server)
    got = server.client().request("POST", "/api/v1/x", b'{"b":2}',
                                  {"Content-Type": "application/json"})
    assert got == (status, body)
    sent = server.requests[0]
    assert sent.startswith(b"POST /api/v1/x HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"b\":2}" in sent


def test_one_socket_serves_requests_in_turn(close_listeners: list[Scripted]) -> None:
    server = Scripted([[OK, OK, OK]])
    close_listeners.append(server)
    client = server.client()
    for _ in range(3):
        assert client.request("POST", "/p", b"", {})[0] == 201
    assert client.opened == 1 and len(server.requests) == 3


def test_a_connection_close_answer_is_not_reused(close_listeners: list[Scripted]) -> None:
    server = Scripted([[CLOSING], [OK]])
    close_listeners.append(server)
    client = server.client()
    assert client.request("POST", "/p", b"", {})[0] == 409
    assert client.request("POST", "/p", b"", {})[0] == 201
    assert client.opened == 2


def test_a_socket_the_server_closed_while_idle_is_replaced(
        close_listeners: list[Scripted]) -> None:
    server = Scripted([[OK], [OK]])  # the first connection closes 0.5 s after its answer
    close_listeners.append(server)
    client = server.client()
    assert client.request("POST", "/p", b"", {})[0] == 201
    time.sleep(1.0)
    assert client.request("POST", "/p", b"", {})[0] == 201
    assert client.opened == 2 and len(server.requests) == 2  # sent once each


def test_a_reused_socket_closed_without_an_answer_is_sent_again_once(
        close_listeners: list[Scripted]) -> None:
    # the server reads the second request and closes without a byte: sent again, fresh
    server = Scripted([[OK, None], [OK]])
    close_listeners.append(server)
    client = server.client()
    assert client.request("POST", "/p", b"1", {})[0] == 201
    assert client.request("POST", "/p", b"2", {})[0] == 201
    assert [r.rsplit(b"\r\n\r\n", 1)[1] for r in server.requests] == [b"1", b"2", b"2"]


def test_a_fresh_socket_without_an_answer_is_an_error(close_listeners: list[Scripted]) -> None:
    server = Scripted([[None]])
    close_listeners.append(server)
    with pytest.raises(ProtocolError, match="without an answer"):
        server.client().request("POST", "/p", b"", {})


def test_something_that_is_not_http_is_an_error(close_listeners: list[Scripted]) -> None:
    server = Scripted([[b"SSH-2.0-OpenSSH\r\n\r\n"]])
    close_listeners.append(server)
    with pytest.raises(ProtocolError, match=r"not an HTTP/1\.1 status line"):
        server.client().request("POST", "/p", b"", {})
