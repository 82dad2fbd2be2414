"""Real servers on 127.0.0.1, an ephemeral port each: in a thread, uvicorn for
ASGI applications, the standard library's wsgiref (threaded) for WSGI ones,
and an upstream whose answers the test sets (`Upstream`); in processes of
their own, gunicorn masters and their workers (`gunicorn_server`), started and
stopped by pid."""

import collections
import contextlib
import http.server
import os
import pathlib
import re
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

TESTS = os.path.dirname(os.path.abspath(__file__))


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


# -- an upstream the test controls ----------------------------------------------


class _UpstreamHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # the tests print nothing
        pass

    def do_GET(self):
        self.server.upstream._serve(self)


class Upstream:
    """A loopback HTTP dependency (a thread of the test process) whose answers
    the test sets. After `hold()` every request waits in the handler until
    `release()` (bounded: a minute); with `failing` set it answers 500, else
    200. It counts its requests (`calls`), those in its handler now
    (`in_flight`), the most at once since `reset_peak()` (`peak`), and which
    callers have requests inside, by the `x-worker-pid` header they send
    (`holders()`)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = 0
        self.in_flight = 0
        self.peak = 0
        self.failing = False
        self._inside = collections.Counter()
        self._gate = threading.Event()
        self._gate.set()

    def hold(self):
        with self.lock:
            self._gate = threading.Event()

    def release(self):
        """Let every held request answer, and the ones after them pass."""
        with self.lock:
            self._gate.set()

    def reset_peak(self):
        with self.lock:
            self.peak = self.in_flight

    def holders(self):
        with self.lock:
            return sorted(pid for pid, n in self._inside.items() if n > 0)

    def wait_in_flight(self, n, timeout=30.0):
        wait_for(lambda: self.in_flight == n, f"{n} requests in the upstream (now {self.in_flight})", timeout)

    def _serve(self, handler):
        pid = int(handler.headers.get("x-worker-pid", "0"))
        with self.lock:
            self.calls += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self._inside[pid] += 1
            gate = self._gate
        try:
            gate.wait(60.0)
            status = 500 if self.failing else 200
            body = b"down" if self.failing else b"ok"
            handler.send_response(status)
            handler.send_header("content-length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except OSError:  # the caller was killed while it waited
            pass
        finally:
            with self.lock:
                self.in_flight -= 1
                self._inside[pid] -= 1


class _ThreadingHTTPServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 64


@contextlib.contextmanager
def upstream_server():
    """An `Upstream` on 127.0.0.1; yields (upstream, url)."""
    try:
        server = _ThreadingHTTPServer(("127.0.0.1", 0), _UpstreamHandler)
    except OSError as e:  # pragma: no cover
        import pytest

        pytest.skip(f"!!! cannot bind 127.0.0.1: {e}")
    server.upstream = Upstream()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield server.upstream, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.upstream.release()
        server.shutdown()
        server.server_close()
        thread.join(30)


# -- gunicorn in processes of its own --------------------------------------------


def wait_for(predicate, what, timeout=30.0):
    """Poll `predicate` every 2 ms until it holds; fail after `timeout` seconds
    (a liveness bound, never a claim about speed)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.002)


def proc_stat(pid):
    """(state letter, start time in clock ticks) of /proc/<pid>/stat, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[0], int(fields[19])


def children(pid):
    """The pids whose parent is `pid`, read from /proc."""
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[1] == str(pid) and fields[0] not in "ZX":
            kids.append(int(entry))
    return sorted(kids)


def kill_and_wait_gone(pids, timeout=30.0):
    """SIGKILL each of `pids` (not children of this process: their parent
    reaps them) and wait until each is a zombie or gone; a pid taken by a new
    process meanwhile (another start time) counts as gone."""
    started = {pid: proc_stat(pid) for pid in pids}
    for pid in pids:
        os.kill(pid, signal.SIGKILL)

    def gone(pid):
        now = proc_stat(pid)
        return now is None or now[0] in "ZX" or now[1] != started[pid][1]

    wait_for(lambda: all(gone(p) for p in pids), f"killed processes {pids} to end", timeout)


# post_worker_init runs in each worker just before it serves: the worker
# leaves a file named by its pid, so the test knows which workers are up.
_GUNICORN_CONF = """\
import os
import pathlib


def post_worker_init(worker):
    pathlib.Path(os.environ["SEAWALL_TEST_READY"], str(os.getpid())).touch()
"""


class Gunicorn:
    """A gunicorn master started by `gunicorn_server`: its `url`, its pid
    (`master`), and the pids of its workers."""

    def __init__(self, proc, url, ready, workers, log):
        self.proc, self.url, self.ready, self.workers, self.log = proc, url, ready, workers, log

    @property
    def master(self):
        return self.proc.pid

    def worker_pids(self):
        return children(self.master)

    def wait_ready(self, timeout=60.0):
        """Until the master has its number of workers, each up (its file left)."""

        def up():
            assert self.proc.poll() is None, f"gunicorn exited with {self.proc.returncode}:\n{self.log_text()}"
            pids = self.worker_pids()
            return len(pids) == self.workers and all((self.ready / str(p)).exists() for p in pids)

        wait_for(up, f"{self.workers} gunicorn workers", timeout)

    def stop(self, timeout=30.0):
        """SIGTERM the master (it stops its workers), wait for it and for every
        worker to end; SIGKILL by pid what is still there after `timeout`."""
        workers = self.worker_pids()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        left = [p for p in workers if (s := proc_stat(p)) is not None and s[0] not in "ZX"]
        if left:
            kill_and_wait_gone(left, timeout)

    def log_text(self):
        return pathlib.Path(self.log).read_text(errors="replace")

    def foreign_lines(self):
        """Lines of the master's and workers' stdout and stderr that gunicorn's
        logger did not write (a traceback, a warning, a library's own output)."""
        return [line for line in self.log_text().splitlines() if not _GUNICORN_LINE.match(line)]


# "[2026-01-02 03:04:05 +0000] [pid] [INFO] ...", gunicorn's error log format
# (uvicorn's workers log through it too).
_GUNICORN_LINE = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}\] \[\d+\] \[[A-Z]+\] ")


@contextlib.contextmanager
def gunicorn_server(app, workdir, *, worker_class, workers, env):
    """`gunicorn --preload` serving `app` (a module of this folder: "module:app"
    or "module:factory()") with `workers` workers of `worker_class`, in folder
    `workdir`, on a loopback socket this process binds and hands over
    (`fd://`). Its log goes to workdir/gunicorn-<pid>.log; it is stopped by pid
    on the way out."""
    try:
        import gunicorn  # noqa: F401
    except ImportError:  # pragma: no cover
        import pytest

        pytest.skip("gunicorn is not installed")
    workdir = pathlib.Path(workdir)
    ready = workdir / "ready"
    ready.mkdir(exist_ok=True)
    conf = workdir / "gunicorn_conf.py"
    conf.write_text(_GUNICORN_CONF)
    sock = _loopback_socket()
    sock.listen(64)
    sock.set_inheritable(True)
    fd = sock.fileno()
    log_path = workdir / f"gunicorn-{time.monotonic_ns()}.log"
    cmd = [
        sys.executable, "-m", "gunicorn", "--config", str(conf), "--worker-class", worker_class,
        "--workers", str(workers), "--bind", f"fd://{fd}", "--preload", "--pythonpath", TESTS,
        "--graceful-timeout", "5", "--timeout", "120", "--error-logfile", "-",
        # gunicorn >= 24 opens a control socket under $HOME unless told not to.
        "--no-control-socket", app,
    ]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=workdir, env=dict(os.environ, SEAWALL_TEST_READY=str(ready), **env),
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(fd,),
        )
    server = Gunicorn(proc, f"http://127.0.0.1:{sock.getsockname()[1]}", ready, workers, log_path)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()
        sock.close()
