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
                if httpx.get(f"{url}/health", headers=headers, timeout=2).status_code == 200:
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
        """SIGSTOP: the server keeps its connections open but never answers again."""
        self.processes[url].send_signal(signal.SIGSTOP)

    def output(self, url: str) -> str:
        port = url.rsplit(":", 1)[1]
        path = self.log_dir / f"server-{port}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)  # a frozen one must see the SIGTERM
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
