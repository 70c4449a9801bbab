"""Peak memory and throughput of ``osmosis dataset upload`` and ``osmosis eval download``.

A prompt-mode JSONL dataset of ``--mib`` MiB (default 200) is generated in a temporary folder
and uploaded to the stand-in platform (``tests-integration/platform``, real HTTP on 127.0.0.1,
8 MiB parts) by the real CLI in its own process; then a run artifact of the same size is
downloaded. For each, the CLI process's peak resident memory (its own ``VmHWM`` at exit) and
the wall time are printed, next to the peak memory of ``osmosis --json dataset list`` (the
CLI's own floor). Memory should stay flat whatever the size: validation streams rows, parts and
downloads stream bytes.

    uv run python benchmarks/platform_transfer.py [--mib 200]

Prints figures; never asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests-integration" / "platform"))

TOKEN = "bench-token"


def run_cli(cli: Any, args: list[str], cwd: Path) -> tuple[int, float, float]:
    """Exit code, peak RSS (MiB, the CLI process's own ``VmHWM``) and wall seconds."""
    start = time.perf_counter()
    result, peak = cli.measured(*args, cwd=cwd)
    return result.code, peak, time.perf_counter() - start


def write_dataset(path: Path, mib: int) -> int:
    row = {"user_prompt": "2*3", "ground_truth": "6", "pad": "x" * 200}
    line = (json.dumps(row) + "\n").encode()
    block = line * ((1 << 20) // len(line))
    with path.open("wb") as fh:
        for _ in range(mib):
            fh.write(block)
    return path.stat().st_size


def main() -> None:
    from platform_harness import Cli  # pyright: ignore[reportMissingImports]
    from stand_in import create_app  # pyright: ignore[reportMissingImports]
    from stand_in_state import Artifact, PlatformState  # pyright: ignore[reportMissingImports]

    from osmosis_ai._util.serving import ThreadedServer, uvicorn_config, uvicorn_server

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mib", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "storage").mkdir()
        state = PlatformState(storage=tmp / "storage")
        state.add_user(TOKEN, "bench@example.com")
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        config = uvicorn_config(create_app(state), log_level="warning")
        server = ThreadedServer(uvicorn_server(config), sockets=[sock]).start()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("OSMOSIS_")},
            "OSMOSIS_TOKEN": TOKEN,
            "OSMOSIS_HOME": str(tmp / "home"),
            "OSMOSIS_PLATFORM_URL": f"http://127.0.0.1:{sock.getsockname()[1]}",
        }
        cli = Cli(tmp / "home", env)
        try:
            code, rss, _ = run_cli(cli, ["--json", "dataset", "list"], tmp)
            print(f"{'osmosis --json dataset list (floor)':<44} peak RSS {rss:6.1f} MiB")
            size = write_dataset(tmp / "bench.jsonl", args.mib)
            code, rss, wall = run_cli(cli, ["--json", "dataset", "upload", "bench.jsonl"], tmp)
            print(
                f"{f'dataset upload {size / 2**20:.0f} MiB (exit {code})':<44} peak RSS "
                f"{rss:6.1f} MiB   {wall:6.2f} s   {size / 2**20 / wall:6.1f} MiB/s "
                "(validation + sha256 + upload)"
            )
            run = state.add_run("eval", "bench", status="succeeded")
            content = (tmp / "bench.jsonl").read_bytes()
            state.artifacts[run["id"]] = [Artifact("trajectories", "big.jsonl", content, 0)]
            del content
            code, rss, wall = run_cli(cli, ["--json", "eval", "download", "bench", "-y"], tmp)
            print(
                f"{f'eval download {size / 2**20:.0f} MiB (exit {code})':<44} peak RSS "
                f"{rss:6.1f} MiB   {wall:6.2f} s   {size / 2**20 / wall:6.1f} MiB/s "
                "(stream + fsync + sha256)"
            )
        finally:
            state.close()
            server.stop()


if __name__ == "__main__":
    main()
