"""The verbs answered by the worker itself (``runtime.direct``), under real gunicorn and
``gpu-extender serve``: the same answers as the WSGI path, a body that arrives in pieces, two
requests in one write, ``Connection: close``, and the answers counted in the metrics. (A body
that never arrives and one over the limit: ``test_serve_limits.py``, whose heads are direct.)"""

from __future__ import annotations

import http.client
import re
import socket
import threading
import time

import orjson

from tests.server.conftest import fixture_bytes
from tests.server.test_serve_limits import limited, read_answer

__all__ = ["limited"]  # the fixture: serve with --body-read-timeout 1, --max-body-bytes 4096

BODY = fixture_bytes("filter_typed_nodenames.json")


def head(path: str = "/filter", length: int = len(BODY), extra: bytes = b"") -> bytes:
    return (b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n%s\r\n" % (path.encode(), length, extra))


def answer_of(raw: bytes) -> tuple[bytes, dict[str, object]]:
    status_line = raw.split(b"\r\n", 1)[0]
    return status_line, orjson.loads(raw.partition(b"\r\n\r\n")[2])


def answers(sock: socket.socket, count: int) -> list[bytes]:
    """``count`` pipelined answers, each cut at its Content-Length."""
    data, out = b"", list[bytes]()
    while len(out) < count:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            found = re.search(rb"Content-Length: (\d+)", data[:end])
            assert found is not None, data[:end]
            length = int(found.group(1))
            if len(data) >= end + 4 + length:
                out.append(data[:end + 4 + length])
                data = data[end + 4 + length:]
                continue
        data += sock.recv(4096)
    return out


def test_the_direct_answer_is_the_wsgi_answer(limited: tuple[int, int]) -> None:
    port, _ = limited
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head() + BODY)
        direct = answer_of(read_answer(sock))
        # a query string is not a direct head: gunicorn and the WSGI route answer it
        sock.sendall(head("/filter?via=wsgi") + BODY)
        wsgi = answer_of(read_answer(sock))
    assert direct[0] == wsgi[0] == b"HTTP/1.1 200 OK"
    assert direct[1] == wsgi[1] and direct[1]["NodeNames"], direct


def test_a_body_in_pieces_and_two_requests_in_one_write(limited: tuple[int, int]) -> None:
    port, _ = limited
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head() + BODY[:100])
        time.sleep(0.3)  # the event loop waits for the rest without a thread
        sock.sendall(BODY[100:])
        first = answer_of(read_answer(sock))
        sock.sendall(head() + BODY + head() + BODY)
        both = answers(sock, 2)  # one recv may hold both: split by Content-Length
        second, third = answer_of(both[0]), answer_of(both[1])
    assert first[0] == second[0] == third[0] == b"HTTP/1.1 200 OK"
    assert first[1] == second[1] == third[1]


def test_connection_close_is_honoured(limited: tuple[int, int]) -> None:
    port, _ = limited
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head(extra=b"Connection: close\r\n") + BODY)
        raw = read_answer(sock)
        assert b"\r\nConnection: close\r\n\r\n" in raw
        assert sock.recv(100) == b""  # closed by the server


def test_direct_answers_are_counted(limited: tuple[int, int]) -> None:
    port, monitoring = limited

    def filters() -> float:
        conn = http.client.HTTPConnection("127.0.0.1", monitoring, timeout=10)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read()
        found = re.search(rb'^gpu_extender_request_duration_seconds_count\{verb="filter"\} '
                          rb"([0-9.e+]+)$", text, re.MULTILINE)
        return float(found.group(1)) if found else 0.0

    before = filters()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        for _ in range(3):
            sock.sendall(head() + BODY)
            assert read_answer(sock).startswith(b"HTTP/1.1 200 OK")
    assert filters() == before + 3



def test_many_pipelined_requests_are_answered_in_order(limited: tuple[int, int]) -> None:
    # one client keeps the pipe full: each buffered request is started from the event loop's
    # queue, not by a nested call (a deep pipeline must not exhaust the stack)
    port, _ = limited
    count = 400
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sender = threading.Thread(target=sock.sendall, args=((head() + BODY) * count,))
        sender.start()
        got = answers(sock, count)
        sender.join(60)
    assert len(got) == count
    assert all(raw.startswith(b"HTTP/1.1 200 OK") for raw in got)
