"""``runtime.direct.parse_direct``: which heads the worker answers itself (the plain shape Go's
client sends) and which go through gunicorn (everything else: gunicorn and the WSGI app answer
those with their own 400/405/413 ...)."""

from __future__ import annotations

import pytest

from extender.runtime.direct import DirectRoute, parse_direct, response_bytes


class Route:
    inline = True
    max_body_bytes = 100
    body_read_timeout_s = 1.0

    def answer_body(self, body: bytes) -> tuple[int, bytes]:
        return 200, body

    def answer_late(self, received: int, length: int) -> tuple[int, bytes]:
        return 408, b"{}"

    def after_answer(self) -> None:
        pass


ROUTES: dict[bytes, DirectRoute] = {b"/filter": Route()}
GO = (b"POST /filter HTTP/1.1\r\nHost: 127.0.0.1:8888\r\nUser-Agent: Go-http-client/1.1\r\n"
      b"Content-Length: 12\r\nContent-Type: application/json\r\nAccept-Encoding: gzip\r\n\r\n")


def test_the_go_clients_head_is_direct_and_the_body_follows_it() -> None:
    request = parse_direct(GO + b'{"Pod": {}}\nNEXT', ROUTES)
    assert request is not None
    assert request.body_start == len(GO)
    assert (request.length, request.end, request.close) == (12, len(GO) + 12, False)


@pytest.mark.parametrize(("head", "why"), [
    (b"GET /filter HTTP/1.1\r\nContent-Length: 2\r\n\r\n", "another method: 405 by the app"),
    (b"POST /filter?x=1 HTTP/1.1\r\nContent-Length: 2\r\n\r\n", "a query string"),
    (b"POST /other HTTP/1.1\r\nContent-Length: 2\r\n\r\n", "not a direct route"),
    (b"POST /filter HTTP/1.0\r\nContent-Length: 2\r\n\r\n", "HTTP/1.0"),
    (b"POST /filter HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "chunked"),
    (b"POST /filter HTTP/1.1\r\nHost: x\r\n\r\n", "no Content-Length"),
    (b"POST /filter HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n", "two lengths"),
    (b"POST /filter HTTP/1.1\r\nContent-Length: +2\r\n\r\n", "not only digits"),
    (b"POST /filter HTTP/1.1\r\nContent-Length: 101\r\n\r\n", "over max_body_bytes: 413"),
    (b"POST /filter HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n", "Expect"),
    (b"POST /filter HTTP/1.1\r\nContent-Length: 2\r\nConnection: Upgrade\r\n\r\n", "Upgrade"),
    (b"POST /filter HTTP/1.1\r\nContent-Length: 2\r\nX-A: b\r\n c\r\n\r\n", "obs-fold"),
    (b"POST /filter HTTP/1.1\r\nContent-Length : 2\r\n\r\n", "space before the colon"),
    (b"POST /filter HTTP/1.1\nContent-Length: 2\n\n", "bare LF line ends"),
    (b"\r\nPOST /filter HTTP/1.1\r\nContent-Length: 2\r\n\r\n", "an empty line first"),
    (b"POST /filter HTTP/1.1\r\nX: " + b"a" * 4100 + b"\r\nContent-Length: 2\r\n\r\n",
     "a head over gunicorn's line limit"),
])
def test_any_other_head_goes_through_gunicorn(head: bytes, why: str) -> None:
    assert parse_direct(head + b"{}", ROUTES) is None, why


def test_connection_close_and_case_insensitive_names() -> None:
    request = parse_direct(b"POST /filter HTTP/1.1\r\ncontent-length:2\r\n"
                           b"connection: keep-alive, Close\r\n\r\n{}", ROUTES)
    assert request is not None and request.close and request.length == 2


def test_the_answer_is_one_buffer_with_its_length() -> None:
    assert response_bytes(200, b'{"a":1}', close=False) == (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n"
        b'{"a":1}')
    assert response_bytes(408, b"{}", close=True).startswith(
        b"HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\nConnection: close\r\n\r\n")
