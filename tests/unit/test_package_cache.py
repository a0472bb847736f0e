"""The package cache's fallbacks: apt in the test images goes direct unless apt-cacher-ng answers,
the relay in front of it hands a request to the archive while it is down, and
scripts/package-cache.sh never fails a run."""

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DETECT = ROOT / "tests/images/node/apt-proxy-detect"
ACNG_PAGE = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<title>Apt-Cacher NG maintenance page</title>"
OTHER_PAGE = b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<title>Directory listing</title>"


@pytest.fixture
def server():
    """A TCP server on a free loopback port answering each connection with `reply` (None: never answers)."""
    sockets = []

    def start(reply):
        listener = socket.create_server(("127.0.0.1", 0))
        sockets.append(listener)

        def serve():
            while True:
                try:
                    conn, _peer = listener.accept()
                except OSError:
                    return
                sockets.append(conn)
                conn.recv(1024)
                if reply is not None:
                    conn.sendall(reply)
                    conn.close()

        threading.Thread(target=serve, daemon=True).start()
        return listener.getsockname()[1]

    yield start
    for sock in sockets:
        sock.close()


def detect(port):
    env = dict(os.environ, GPULAB_APT_CACHE_HOST="127.0.0.1", GPULAB_APT_CACHE_PORT=str(port))
    return subprocess.run(
        [str(DETECT), "http://deb.debian.org"], env=env, capture_output=True, text=True, timeout=10, check=False
    )


def free_port():
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return sock.getsockname()[1]


def test_apt_uses_a_cache_that_answers_as_apt_cacher_ng(server):
    port = server(ACNG_PAGE)
    assert detect(port).stdout == f"http://127.0.0.1:{port}\n"


@pytest.mark.parametrize(
    "reply",
    [OTHER_PAGE, None],
    ids=["another-program-on-the-port", "a-port-that-never-answers"],
)
def test_apt_goes_direct_when_the_port_holds_something_else(server, reply):
    assert detect(server(reply)).stdout == "DIRECT\n"


def test_apt_goes_direct_when_nothing_listens():
    assert detect(free_port()).stdout == "DIRECT\n"


def test_an_unwritable_cache_directory_is_one_line_and_no_failure(tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    env = dict(os.environ, GPULAB_PACKAGE_CACHE_DIR=str(blocker / "cache"))
    run = subprocess.run(
        [str(ROOT / "scripts/package-cache.sh"), "start"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert run.returncode == 0
    assert run.stdout == "GPULAB_PIP_CACHE=\nGPULAB_APT_CACHE=\nGPULAB_APT_CACHE_RESTARTS=0\n"
    assert run.stderr == (
        f"package cache: {blocker / 'cache'} is not writable; containers download from the archive,"
        " pip runs without a cache\n"
    )


def ask(port, request):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


@pytest.fixture
def relay():
    """scripts/package-relay.py on a free port in front of cache_port; returns its port."""
    procs = []

    def start(cache_port):
        port = free_port()
        procs.append(
            subprocess.Popen([sys.executable, str(ROOT / "scripts/package-relay.py"), str(port), str(cache_port)])
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the relay did not listen")

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


CACHE_REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\ncache"
ORIGIN_REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\norigin"


def test_the_relay_hands_requests_to_the_cache_while_it_answers(server, relay):
    port = relay(server(CACHE_REPLY))
    origin = server(ORIGIN_REPLY)
    assert ask(port, f"GET http://127.0.0.1:{origin}/debian/x.deb HTTP/1.1\r\n\r\n".encode()) == CACHE_REPLY


def test_the_relay_goes_to_the_archive_when_the_cache_is_down(server, relay):
    port = relay(free_port())  # nothing listens where the cache should be
    origin = server(ORIGIN_REPLY)
    assert ask(port, f"GET http://127.0.0.1:{origin}/debian/x.deb HTTP/1.1\r\n\r\n".encode()) == ORIGIN_REPLY
    # A request that names no archive has nowhere to go; the relay still says who it is.
    assert ask(port, b"GET /acng-report.html HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.1 502 Bad Gateway")
    assert ask(port, b"GET /gpulab-package-relay HTTP/1.0\r\n\r\n").endswith(b"gpulab package relay\n")
