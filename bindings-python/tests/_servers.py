"""Real servers on 127.0.0.1, an ephemeral port each, in a thread: uvicorn for
ASGI applications, the standard library's wsgiref (threaded) for WSGI ones."""

import contextlib
import socket
import socketserver
import threading
import time
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


def _loopback_socket():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", 0))
    except OSError as e:  # pragma: no cover - a machine without loopback
        import pytest

        s.close()
        pytest.skip(f"!!! cannot bind 127.0.0.1: {e}")
    return s


@contextlib.contextmanager
def uvicorn_server(app):
    import uvicorn

    sock = _loopback_socket()
    config = uvicorn.Config(app, log_level="critical", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        end = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > end:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.005)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):  # the tests print nothing
        pass


@contextlib.contextmanager
def wsgi_server(app):
    try:
        server = make_server("127.0.0.1", 0, app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)
    except OSError as e:  # pragma: no cover
        import pytest

        pytest.skip(f"!!! cannot bind 127.0.0.1: {e}")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(30)
