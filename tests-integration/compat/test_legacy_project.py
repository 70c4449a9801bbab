"""Issue 38 item 1: a project made by 0.3.8's own ``osmosis rollout init`` runs unmodified.

Its ``main.py`` is script mode (no module-level ``app``; ``main()`` builds the app and calls
``uvicorn.run(app, host="0.0.0.0", port=$_OSMOSIS_ROLLOUT_PORT or 8000)``). This repository's
``osmosis eval run`` and ``osmosis rollout serve`` must score it, binding loopback themselves.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
from compat_support import OSMOSIS, ROWS, LegacyProject, free_port, osmosis, read_jsonl

from osmosis_ai.rollout.client import RolloutClient
from osmosis_ai.testing import ScriptedPolicyServer

#: The 0.3.8 eval config names platform secrets; a local run checks they are set.
SECRETS = {"OPENAI_API_KEY": "unused-by-the-mock-policy"}


def test_the_scaffold_is_script_mode(legacy_project: LegacyProject) -> None:
    """What the other tests rely on: 0.3.8 generated a main.py without a module-level app."""
    tree = ast.parse((legacy_project.rollout_dir / "main.py").read_text(encoding="utf-8"))
    top_level = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    assert "app" not in top_level
    assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)
    assert '"0.0.0.0"' in (legacy_project.rollout_dir / "main.py").read_text(encoding="utf-8")


def test_eval_run_scores_the_unmodified_project(legacy_project: LegacyProject) -> None:
    ws = legacy_project.workspace
    done = osmosis(
        "eval", "run", str(legacy_project.eval_config.relative_to(ws)),
        "--model", "mock", "--dataset", str(legacy_project.dataset.relative_to(ws)),
        "--name", "legacy",
        cwd=ws, home=ws.parent / "home", env=SECRETS,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    index = read_jsonl(ws / ".osmosis" / "evals" / "legacy" / "index.jsonl")
    assert sorted(i["source_row_index"] for i in index) == list(range(len(ROWS)))
    assert [(i["status"], i["reward"]) for i in index] == [("success", 1.0)] * len(ROWS)


def _serve(legacy_project: LegacyProject, port: int, log: Path) -> subprocess.Popen[bytes]:
    ws = legacy_project.workspace
    with log.open("wb") as out:
        return subprocess.Popen(
            [OSMOSIS, "rollout", "serve", "rollouts/calc", "--port", str(port)],
            cwd=ws,
            env={**os.environ, "OSMOSIS_HOME": str(ws.parent / "home"), "NO_COLOR": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


def _wait_healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 120
    while True:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"{url} never became healthy\n{log.read_text()}"
        time.sleep(0.05)


async def _score(url: str) -> list[tuple[str, float | None]]:
    results = []
    with ScriptedPolicyServer("multiply", max_recorded=0) as policy:
        async with RolloutClient(url=url) as client:
            for index, (a, b) in enumerate(ROWS):
                rollout_id = f"legacy-{index}"
                result = await client.run_rollout(
                    [{"role": "user", "content": f"What is {a} multiplied by {b}?"}],
                    policy.chat_completions_url(rollout_id),
                    rollout_id,
                    label=str(a * b),
                )
                sample = result.sample
                results.append((str(result.status), sample.reward if sample else None))
    return results


def test_rollout_serve_serves_the_unmodified_project(
    legacy_project: LegacyProject, tmp_path: Path
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    process = _serve(legacy_project, port, log)
    try:
        _wait_healthy(process, url, log)
        assert asyncio.run(_score(url)) == [("success", 1.0)] * len(ROWS)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    output = log.read_text()
    # Bound where serve was told (loopback by default), not the script's 0.0.0.0.
    assert f"on http://127.0.0.1:{port}" in output, output
    assert "0.0.0.0" not in output, output


def _validate(ws: Path) -> dict[str, dict[str, Any]]:
    done = osmosis("--json", "rollout", "validate", "rollouts/calc", cwd=ws, home=ws.parent / "h")
    assert done.returncode == 0, done.stdout + done.stderr
    return {c["name"]: c for c in json.loads(done.stdout)["resource"]["checks"]}


def test_validate_reports_script_mode_and_the_pin_edit(legacy_project: LegacyProject) -> None:
    ws = legacy_project.workspace
    checks = _validate(ws)
    imported = checks["import"]
    assert imported["status"] == "ok", imported  # the 0.3 pin does not skip the import check
    assert imported["details"]["mode"] == "script"
    assert imported["details"]["script"]["host"] == "0.0.0.0"
    assert "script mode" in imported["message"]
    assert "binds 0.0.0.0" in imported["message"]
    pin = checks["sdk pin"]
    assert pin["status"] == "warning"
    assert (
        'rollouts/calc/pyproject.toml: "osmosis-ai[server]>=0.3.0,<0.4" -> '
        '"osmosis-ai[server]>=0.4,<0.5"'
    ) in pin["message"]


def test_doctor_fix_moves_the_pin_to_this_sdk(legacy_project: LegacyProject) -> None:
    ws = legacy_project.workspace
    home = ws.parent / "h"
    doctor = osmosis("--json", "doctor", cwd=ws, home=home)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["resource"]["checks"]}
    assert checks["rollout calc sdk pin"]["fix"] == "osmosis doctor --fix"
    fixed = osmosis("--json", "doctor", "--fix", cwd=ws, home=home)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    pyproject = (legacy_project.rollout_dir / "pyproject.toml").read_text(encoding="utf-8")
    assert '"osmosis-ai[server]>=0.4,<0.5"' in pyproject
    assert "<0.4" not in pyproject
    after = _validate(ws)
    assert "sdk pin" not in after
    assert after["dependencies"]["status"] == "ok"
    assert after["import"]["details"]["mode"] == "script"


def test_eval_run_isolated_says_the_edit(legacy_project: LegacyProject) -> None:
    ws = legacy_project.workspace
    done = osmosis(
        "--json", "eval", "run", "configs/eval/calc.toml", "--model", "mock",
        "--dataset", "data/calc.jsonl", "--isolated",
        cwd=ws, home=ws.parent / "home", env=SECRETS,
    )  # fmt: skip
    assert done.returncode == 1
    assert '-> \\"osmosis-ai[server]>=0.4,<0.5\\"' in done.stderr, done.stderr
