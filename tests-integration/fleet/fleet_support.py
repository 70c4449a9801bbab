"""Start and stop real rollout-server processes (`osmosis rollout serve`) on free ports."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

OSMOSIS = str(Path(sys.executable).with_name("osmosis"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerFleet:
    """Rollout servers, each its own process (``osmosis rollout serve``) on 127.0.0.1."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.frozen: set[str] = set()
        self.protocol_pids: dict[str, int | None] = {}  # serve()'s protocol process, if forked

    def start(
        self, workspace: Path, count: int, env: dict[str, str], entrypoint: str = "rollouts/tiny"
    ) -> list[str]:
        """Start ``count`` servers and wait for each one's ``/health``; returns their URLs."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        urls = []
        for _ in range(count):
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            with (self.log_dir / f"server-{port}.log").open("wb") as log:
                self.processes[url] = subprocess.Popen(
                    [OSMOSIS, "rollout", "serve", entrypoint, "--port", str(port)],
                    cwd=workspace,
                    env={**os.environ, **env},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            urls.append(url)
        key = env.get("OSMOSIS_ROLLOUT_API_KEY")
        for url in urls:
            self.wait_healthy(url, key)
        return urls

    def wait_healthy(self, url: str, key: str | None, timeout: float = 60.0) -> None:
        headers = {"authorization": f"Bearer {key}"} if key else {}
        deadline = time.monotonic() + timeout
        while True:
            process = self.processes[url]
            assert process.poll() is None, self.output(url)
            try:
                health = httpx.get(f"{url}/health", headers=headers, timeout=2)
                if health.status_code == 200:
                    # serve()'s protocol process, when it forked one (freeze stops it too)
                    self.protocol_pids[url] = (health.json().get("protocol") or {}).get("pid")
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"{url} never became healthy\n{self.output(url)}"
            time.sleep(0.05)

    def kill(self, url: str) -> None:
        """SIGKILL: the server gets no chance to drain or answer anything."""
        process = self.processes[url]
        process.send_signal(signal.SIGKILL)
        process.wait()

    def freeze(self, url: str) -> None:
        """SIGSTOP: the server keeps its connections open but never answers again (its
        protocol process too, when ``serve()`` forked one: it is named in ``/health``)."""
        self.processes[url].send_signal(signal.SIGSTOP)
        protocol = self.protocol_pids.get(url)
        if protocol is not None:
            os.kill(protocol, signal.SIGSTOP)
        self.frozen.add(url)

    def output(self, url: str) -> str:
        port = url.rsplit(":", 1)[1]
        path = self.log_dir / f"server-{port}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def stop(self) -> None:
        for url, process in self.processes.items():
            if process.poll() is None and url in self.frozen:
                # Its drain would retry callbacks to an eval that has finished for about 10 s:
                # the test is over, nothing is left to prove with it.
                process.kill()
            elif process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class MisbehavingServer:
    """A server on 127.0.0.1 (a thread of the test process) that speaks the rollout protocol's
    routes but misbehaves: it admits every rollout (``202`` with a lease) and then answers
    each poll with ``poll_body`` (``None``: a well-formed "running" for ever, i.e. it admits
    and never finishes). ``admitted`` lists the rollout ids it took."""

    def __init__(self, poll_body: bytes | None, capacity: int = 4) -> None:
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.admitted: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _send(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                if self.path == "/health":
                    health = {
                        "status": "ok",
                        "max_queue_depth": capacity,
                        "lifecycle": {"accepting_rollouts": True, "active_rollouts": 0},
                    }
                    self._send(200, json.dumps(health).encode())
                    return
                rollout_id = self.path.split("/")[2]
                if poll_body is None:
                    running = {"rollout_id": rollout_id, "status": "running"}
                    self._send(200, json.dumps(running).encode())
                else:
                    self._send(200, poll_body)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.path != "/rollout":
                    self._send(200, b'{"cancelled": [], "not_found": [], "already_done": []}')
                    return
                rollout_id = json.loads(body)["rollout_id"]
                owner.admitted.append(rollout_id)
                admission = {
                    "rollout_id": rollout_id,
                    "status": "queued",
                    "polling_lease_token": "t" * 43,
                    "result_wait_timeout_sec": 0.2,
                    "polling_lease_timeout_sec": 3600.0,
                }
                self._send(202, json.dumps(admission).encode())

        self._server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> MisbehavingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
