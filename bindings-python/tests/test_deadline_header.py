"""The x-request-deadline-ms header takes the Node middleware's grammar and
range (bindings-node/lib/middleware/common.js: JavaScript's \\s, then ASCII
digits with an optional fraction, then \\s; a value > 0 that is finite as a
double) and a bad one gets Node's 400, byte for byte. The table is written by
hand from that rule; it holds the Node test's values (abc, 0, -5, 1e3 refused;
2147483647, 2147483648, 99999999999999999 taken)."""

import asyncio

import pytest

import seawall
from seawall.asgi import SeawallMiddleware as ASGIMiddleware
from seawall.wsgi import SeawallMiddleware as WSGIMiddleware
from _servers import uvicorn_server, wsgi_server

# (header value, the milliseconds Node takes, or None: Node answers 400)
TABLE = [
    ("5", 5.0),
    ("0.5", 0.5),
    ("007", 7.0),
    ("3000", 3000.0),
    (" 7 ", 7.0),
    ("\t7", 7.0),
    ("\u00a07\u00a0", 7.0),  # NBSP (latin-1 0xA0) is JavaScript whitespace
    ("2147483647", 2147483647.0),
    ("2147483648", 2147483648.0),
    ("99999999999999999", 1e17),
    ("abc", None),
    ("soon", None),
    ("0", None),
    ("00", None),
    ("0.0", None),
    ("-5", None),
    ("-1", None),
    ("+5", None),
    ("1e3", None),
    ("1E3", None),
    ("1_000", None),
    (".5", None),
    ("5.", None),
    ("1.2.3", None),
    ("0x10", None),
    ("Infinity", None),
    ("inf", None),
    ("NaN", None),
    ("", None),
    ("5, 6", None),
    ("5 5", None),
    ("\x1c5", None),  # Python's str.strip() whitespace, not JavaScript's
    ("\x855", None),  # NEL, likewise
    ("1" + "0" * 400, None),  # a double's infinity
    ("0." + "0" * 400 + "1", None),  # rounds to 0 as a double
]


def node_400(shown):
    """Node's body for a refused value, `shown` as JSON.stringify quotes it."""
    return ('{"error":"invalid x-request-deadline-ms: must be a number of milliseconds greater than 0, not '
            + shown + '"}').encode("utf-8")


# How JSON.stringify writes a value inside the message, then quoted again: a
# control character as \u00XX (lowercase), which the body escapes once more.
SHOWN = {"\x1c5": '\\"\\\\u001c5\\"'}


def quoted(value):
    return SHOWN.get(value, '\\"' + value + '\\"')  # the rest need no escaping but the quotes


def deadline_app_asgi():
    async def app(scope, receive, send):
        d = seawall.current_deadline()
        body = b"none" if d is None else repr(d.remaining()).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": body})
    return app


def deadline_app_wsgi(environ, start_response):
    d = seawall.current_deadline()
    start_response("200 OK", [("content-type", "text/plain")])
    return [b"none" if d is None else repr(d.remaining()).encode()]


def call_asgi(mw, headers):
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/d", "headers": headers}
    asyncio.run(mw(scope, receive, send))
    start = sent[0]
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in start["headers"]}
    return start["status"], headers, b"".join(m.get("body", b"") for m in sent[1:])


def call_wsgi(mw, value):
    got = []
    body = b"".join(mw({"PATH_INFO": "/d", "REQUEST_METHOD": "GET", "HTTP_X_REQUEST_DEADLINE_MS": value},
                       lambda status, headers: got.append((status, dict(headers)))))
    status, headers = got[0]
    return int(status.split()[0]), headers, body


def check(value, ms, status, headers, body):
    if ms is None:
        assert status == 400, value
        assert body == node_400(quoted(value)), value
        assert headers["content-type"] == "application/json; charset=utf-8"
    else:
        assert status == 200, (value, body)
        remaining = float(body)
        # The request's budget, less what the call took; beyond ~584 years of
        # nanoseconds a deadline saturates (Python's Deadline is u64 ns).
        assert 0 <= remaining <= ms / 1000, value
        assert remaining >= min(ms / 1000, 1e9) - 5, value


@pytest.mark.parametrize("value,ms", TABLE, ids=[repr(v)[:24] for v, _ in TABLE])
def test_asgi_deadline_header_follows_node(value, ms):
    mw = ASGIMiddleware(deadline_app_asgi(), bulkhead=seawall.Bulkhead(1))
    status, headers, body = call_asgi(mw, [(b"x-request-deadline-ms", value.encode("latin-1"))])
    check(value, ms, status, headers, body)


@pytest.mark.parametrize("value,ms", TABLE, ids=[repr(v)[:24] for v, _ in TABLE])
def test_wsgi_deadline_header_follows_node(value, ms):
    status, headers, body = call_wsgi(WSGIMiddleware(deadline_app_wsgi, bulkhead=seawall.Bulkhead(1)), value)
    check(value, ms, status, headers, body)


def test_refusal_body_quotes_the_value_as_json_stringify_does():
    # JSON.stringify('a"b\\é') is "a\"b\\é" (é raw, in the UTF-8 body); the
    # error message holding it is quoted once more.
    value = 'a"b\\\u00e9'
    expected = node_400('\\"a\\\\\\"b\\\\\\\\\u00e9\\"')
    mw = ASGIMiddleware(deadline_app_asgi())
    assert call_asgi(mw, [(b"x-request-deadline-ms", value.encode("latin-1"))])[2] == expected
    assert call_wsgi(WSGIMiddleware(deadline_app_wsgi), value)[2] == expected


def test_asgi_repeated_header_is_one_joined_value_as_in_node():
    # Node joins a repeated header with ", ": "5, 6" is no number of ms.
    mw = ASGIMiddleware(deadline_app_asgi())
    status, _, body = call_asgi(mw, [(b"x-request-deadline-ms", b"5"), (b"X-Request-Deadline-Ms", b"6")])
    assert (status, body) == (400, node_400(quoted("5, 6")))
    assert call_asgi(mw, [])[2] == b"none"


# Over HTTP: the values a client sends as they are (no surrounding whitespace,
# which the servers strip, and ASCII).
OVER_HTTP = [(v, ms) for v, ms in TABLE if v and v == v.strip() and v.isascii() and v.isprintable()
             and len(v) < 100]


def test_deadline_header_over_http_under_uvicorn_and_wsgiref():
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("uvicorn")
    asgi = ASGIMiddleware(deadline_app_asgi(), bulkhead=seawall.Bulkhead(1))
    wsgi = WSGIMiddleware(deadline_app_wsgi, bulkhead=seawall.Bulkhead(1))
    assert len(OVER_HTTP) > 20
    with uvicorn_server(asgi) as a, wsgi_server(wsgi) as w, httpx.Client(timeout=30) as c:
        for base in (a, w):
            for value, ms in OVER_HTTP:
                r = c.get(base + "/d", headers={"x-request-deadline-ms": value})
                check(value, ms, r.status_code, dict(r.headers), r.content)
