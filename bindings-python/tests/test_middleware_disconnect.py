"""A client that goes away gives its permit back: the ASGI middleware watches
``receive`` for ``http.disconnect`` while the application runs, cancels the
application and releases the request's permit at once (the Node middleware
releases it when the response closes). Under uvicorn on loopback, then the
middleware's own promises with a scripted server: nothing left running, the
body handed on as the server gives it, exceptions unchanged, one release."""

import asyncio
import hashlib
import socket
import threading
import time
from urllib.parse import urlsplit

import pytest

import seawall
from seawall.asgi import SeawallMiddleware as ASGIMiddleware
from _servers import uvicorn_server



def http_tools():
    pytest.importorskip("uvicorn")
    return pytest.importorskip("httpx")


def wait_until(cond, seconds=5.0):
    end = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.005)


class Hanging:
    """/hang never answers, /hang-streaming sends one chunk then never ends;
    both until ``release`` is set. /x answers "ok"."""

    def __init__(self):
        self.entered = threading.Event()
        self.release = threading.Event()
        self.cancelled = threading.Event()

    async def __call__(self, scope, receive, send):
        path = scope["path"]
        if path == "/x":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})
            return
        if path == "/hang-streaming":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"first;", "more_body": True})
        self.entered.set()
        try:
            while not self.release.is_set():
                await asyncio.sleep(0.005)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        await send({"type": "http.response.body", "body": b"late"})


def close_before_answer(base):
    """A client that sends its request and closes the connection unanswered."""
    u = urlsplit(base)
    s = socket.create_connection((u.hostname, u.port), timeout=30)
    s.sendall(b"GET /hang HTTP/1.1\r\nhost: seawall\r\n\r\n")
    return s


@pytest.mark.parametrize("when", ["before the response", "mid-stream"])
def test_asgi_client_gone_gives_the_permit_back_and_cancels_the_handler(when):
    httpx = http_tools()
    hanging = Hanging()
    pool = seawall.Bulkhead(1)
    with uvicorn_server(ASGIMiddleware(hanging, bulkhead=pool)) as base:
        try:
            if when == "before the response":
                s = close_before_answer(base)
                assert hanging.entered.wait(30)
                assert pool.active == 1
                s.close()
            else:
                with httpx.Client(timeout=30) as c, c.stream("GET", base + "/hang-streaming") as r:
                    chunks = r.iter_raw()  # held: a dropped iterator closes the stream
                    assert next(chunks) == b"first;"
                    assert pool.active == 1
                # Leaving the unfinished stream closes its connection.
            wait_until(lambda: pool.active == 0)
            assert hanging.cancelled.wait(5)
            with httpx.Client(timeout=30) as c:  # max_concurrent 1: admitted only if the permit is back
                r = c.get(base + "/x")
                assert (r.status_code, r.text) == (200, "ok")
            wait_until(lambda: pool.active == 0)
        finally:
            hanging.release.set()  # the old behaviour: let the handler end so the server can stop


def test_asgi_streamed_response_and_large_body_in_chunks_pass_unchanged():
    httpx = http_tools()
    pytest.importorskip("starlette")
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    pool = seawall.Bulkhead(1)
    seen = []

    async def upload(request):
        h, n, chunks = hashlib.sha256(), 0, 0
        async for chunk in request.stream():
            h.update(chunk)
            n += len(chunk)
            chunks += 1
        seen.append(pool.active)
        return JSONResponse({"bytes": n, "sha256": h.hexdigest(), "chunks": chunks})

    async def stream(request):
        async def parts():
            for i in range(50):
                seen.append(pool.active)
                yield b"%02d," % i
                await asyncio.sleep(0)
        return StreamingResponse(parts(), media_type="text/plain")

    app = Starlette(routes=[Route("/upload", upload, methods=["POST"]), Route("/stream", stream)],
                    middleware=[Middleware(ASGIMiddleware, bulkhead=pool)])
    body = bytes(range(256)) * 16384  # 4 MiB, sent in pieces

    def pieces():
        for i in range(0, len(body), 65536):
            yield body[i:i + 65536]

    with uvicorn_server(app) as base, httpx.Client(timeout=30) as c:
        for _ in range(2):
            r = c.post(base + "/upload", content=pieces())
            doc = r.json()
            assert (r.status_code, doc["bytes"], doc["sha256"]) == (200, len(body), hashlib.sha256(body).hexdigest())
            assert doc["chunks"] > 1
            r = c.get(base + "/stream")
            assert r.text == "".join("%02d," % i for i in range(50))
        assert set(seen) == {1}  # each held its permit while it ran
        wait_until(lambda: pool.active == 0)


# -- the middleware against a scripted server ---------------------------------


class Script:
    """A server's receive and send: the request's body ``chunks`` (each an
    ``http.request``), then a wait until ``disconnect`` is set (uvicorn says
    ``http.disconnect`` at once after the response is complete, as here when
    ``disconnect_after_response``)."""

    def __init__(self, chunks=(b"",), disconnect_after_response=False):
        self.messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
                         for i, c in enumerate(chunks)]
        self.disconnect = asyncio.Event()
        self.sent = []
        self.receives = 0
        self.after_response = disconnect_after_response

    async def receive(self):
        if self.messages:
            self.receives += 1
            return self.messages.pop(0)
        await self.disconnect.wait()
        return {"type": "http.disconnect"}

    async def send(self, message):
        self.sent.append(message)
        if self.after_response and message["type"] == "http.response.body" and not message.get("more_body"):
            self.disconnect.set()


SCOPE = {"type": "http", "method": "GET", "path": "/", "headers": []}


async def answer(send, body=b"ok"):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


def others():
    return asyncio.all_tasks() - {asyncio.current_task()}


def test_nothing_left_running_when_the_app_returns_without_reading():
    pool = seawall.Bulkhead(1)

    async def app(scope, receive, send):
        await answer(send)

    async def main():
        script = Script()
        await ASGIMiddleware(app, bulkhead=pool)(dict(SCOPE), script.receive, script.send)
        assert others() == set()  # the reader, waiting in receive, was ended
        assert [m["type"] for m in script.sent] == ["http.response.start", "http.response.body"]
        assert pool.active == 0

    asyncio.run(main())


def test_body_chunks_reach_the_app_in_order_one_message_ahead():
    pool = seawall.Bulkhead(1)
    chunks = [b"a" * 10, b"b" * 20, b"c" * 30, b"d"]
    got, ahead = [], []

    async def main():
        script = Script(chunks)

        async def app(scope, receive, send):
            while True:
                await asyncio.sleep(0.01)  # the reader is free to run ahead meanwhile
                ahead.append(script.receives - len(got))
                m = await receive()
                got.append(m["body"])
                if not m["more_body"]:
                    break
            await answer(send, b"".join(got))

        await ASGIMiddleware(app, bulkhead=pool)(dict(SCOPE), script.receive, script.send)
        assert others() == set()
        return script

    script = asyncio.run(main())
    assert got == chunks and script.sent[-1]["body"] == b"a" * 10 + b"b" * 20 + b"c" * 30 + b"d"
    # Before each of its receives the reader has read the one message it
    # hands on next, and no more (then, the body done, it waits for more).
    assert ahead == [1, 1, 1, 1]


def test_a_disconnect_releases_at_once_and_cancels_the_app_once():
    pool = seawall.Bulkhead(1)
    log = []

    async def main():
        script = Script()
        inside = asyncio.Event()

        async def app(scope, receive, send):
            await receive()
            inside.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                log.append(("cancelled, permits in use", pool.active))
                await asyncio.sleep(0.01)  # cleanup still runs, the permit already back
                log.append(("receive after", (await receive())["type"], (await receive())["type"]))
                raise

        async def client_goes():
            await inside.wait()
            assert pool.active == 1
            script.disconnect.set()

        goes = asyncio.ensure_future(client_goes())
        # Returns (no CancelledError, no second release's PermitAlreadyUsedError).
        assert await ASGIMiddleware(app, bulkhead=pool)(dict(SCOPE), script.receive, script.send) is None
        await goes
        assert others() == set()

    asyncio.run(main())
    assert log == [("cancelled, permits in use", 0), ("receive after", "http.disconnect", "http.disconnect")]
    assert pool.active == 0 and pool.metrics()["active"] == 0


def test_a_disconnect_after_the_response_cancels_nothing():
    pool = seawall.Bulkhead(1)
    log = []

    async def app(scope, receive, send):
        await answer(send)
        await asyncio.sleep(0.05)  # background work after the response, as Starlette's
        log.append(("background done, permits in use", pool.active))

    async def main():
        script = Script(disconnect_after_response=True)
        await ASGIMiddleware(app, bulkhead=pool)(dict(SCOPE), script.receive, script.send)
        assert script.disconnect.is_set()

    asyncio.run(main())
    assert log == [("background done, permits in use", 1)] and pool.active == 0


def test_exceptions_pass_through_and_release_once():
    pool = seawall.Bulkhead(1)

    async def app(scope, receive, send):
        raise LookupError("the app's own")

    async def main():
        with pytest.raises(LookupError, match="the app's own"):
            await ASGIMiddleware(app, bulkhead=pool)(dict(SCOPE), Script().receive, Script().send)
        assert others() == set()

    asyncio.run(main())
    assert pool.active == 0


def test_a_server_receive_that_raises_reaches_the_app():
    pool = seawall.Bulkhead(1)

    async def receive():
        raise OSError("the server's")

    async def app(scope, receive_, send):
        for _ in range(2):  # every later receive says the same
            with pytest.raises(OSError, match="the server's"):
                await receive_()
        raise KeyError("after")

    async def main():
        with pytest.raises(KeyError):
            await ASGIMiddleware(app, bulkhead=pool)(dict(SCOPE), receive, Script().send)
        assert others() == set()

    asyncio.run(main())
    assert pool.active == 0


@pytest.mark.parametrize("client_left", [False, True], ids=["alone", "as-the-client-leaves"])
def test_a_cancel_of_the_middleware_reaches_the_app_and_goes_on(client_left):
    # With the client leaving in the same moment, the server's cancel comes
    # after the disconnect has cancelled the app: it must not be taken for ours
    # and swallowed (Python < 3.11 has no Task.cancelling to tell them apart).
    pool = seawall.Bulkhead(1)
    log = []

    async def app(scope, receive, send):
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            log.append("app cancelled")
            raise

    async def main():
        script = Script()
        t = asyncio.ensure_future(ASGIMiddleware(app, bulkhead=pool)(dict(SCOPE), script.receive, script.send))
        while pool.active == 0:
            await asyncio.sleep(0.001)
        if client_left:
            script.disconnect.set()
            await asyncio.sleep(0)  # the reader takes the disconnect and cancels the app
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        await asyncio.sleep(0)
        assert others() == set()

    asyncio.run(main())
    assert log == ["app cancelled"] and pool.active == 0
