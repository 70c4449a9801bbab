"""``eval run``'s documented flags (0.3.8's names): ``--dataset-file``, ``--secrets-file``,
``--rollout-port``, ``--verbose`` (``--upload`` runs against the stand-in platform in
tests-integration/platform/test_eval_upload.py)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from eval_support import Cli, read_jsonl

TEMPLATE = "multiply-local-plain"
CANARY = "canary-secret-9876"


def _workspace(cli: Cli, tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    assert cli.run("init", str(ws), cwd=tmp_path).code == 0
    assert cli.run("template", "apply", TEMPLATE, cwd=ws).code == 0
    rows = (ws / "data" / "multiply.jsonl").read_text(encoding="utf-8").splitlines()[:2]
    (ws / "rows.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (ws / "s.env").write_text(f"MY_TOKEN={CANARY}\n", encoding="utf-8")
    return ws


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_dataset_file_secrets_file_rollout_port_and_verbose(cli: Cli, tmp_path: Path) -> None:
    ws = _workspace(cli, tmp_path)
    port = _free_port()
    result = cli.run(
        "--json", "eval", "run", f"configs/eval/{TEMPLATE}.toml", "--model", "mock",
        "--dataset-file", "rows.jsonl", "--secrets-file", "s.env", "--rollout-port", str(port),
        "--verbose", "--name", "flags", cwd=ws,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    run = ws / ".osmosis" / "evals" / "flags"
    assert len(read_jsonl(run / "index.jsonl")) == 2  # the two rows of --dataset-file
    healthy = [
        json.loads(line[line.index("{") :])
        for line in (run / "logs.txt").read_text(encoding="utf-8").splitlines()
        if "rollout server healthy" in line
    ]
    assert [h["url"] for h in healthy] == [f"http://127.0.0.1:{port}"]  # the port asked for
    assert "Application startup complete" in (run / "rollout_server.log").read_text()  # info
    for path in run.rglob("*"):
        if path.is_file():
            assert CANARY not in path.read_text(encoding="utf-8", errors="replace"), path
    assert CANARY not in result.stdout + result.stderr


def test_a_taken_rollout_port_says_what_to_do(cli: Cli, tmp_path: Path) -> None:
    ws = _workspace(cli, tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli.run(
            "--json", "eval", "run", f"configs/eval/{TEMPLATE}.toml", "--model", "mock",
            "--rollout-port", str(port), "--name", "taken", cwd=ws,
        )  # fmt: skip
    assert result.code == 1
    assert f"cannot serve the rollout on 127.0.0.1:{port}" in result.stderr
    assert "choose another --rollout-port" in result.stderr
