"""The workspace template's ``multiply-harbor-strands`` rollout as published, unmodified.

Opt-in: ``OSMOSIS_WORKSPACE_TEMPLATE_PATH`` names a local checkout of
``Osmosis-AI/workspace-template`` (the variable osmosis-ai 0.3.8 reads for a local template
checkout). Nothing of it is committed here, and the test writes nothing into it: the checkout is
copied to a temporary workspace first. Its rollout runs exactly as published (a 0.3.x script-mode
``main.py`` that hard-codes Harbor's Docker environment, a ``<0.4`` pin) under

* ``osmosis eval run configs/eval/multiply-harbor-strands.toml`` (the published config), and
* ``osmosis rollout serve rollouts/multiply-harbor-strands`` driven by ``RolloutClient``,

with real Harbor trials in the Docker-free local sandbox (``OSMOSIS_HARBOR_ENV=local``, which
overrides the environment the script chose) and a scripted policy that solves the published
dataset's decimal products with the rollout's own ``multiply`` tool.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from compat_support import OSMOSIS, free_port, osmosis, read_jsonl

from osmosis_ai.rollout.client import RolloutClient
from osmosis_ai.testing import Reply, ScriptedPolicyServer, ToolCall
from osmosis_ai.testing.responders import last_user_text, message_text

TEMPLATE_ENV = "OSMOSIS_WORKSPACE_TEMPLATE_PATH"
ROLLOUT = "multiply-harbor-strands"
CONFIG = f"configs/eval/{ROLLOUT}.toml"
ROWS = 3
_VALUE = re.compile(r"val\d+\s*=\s*([-+]?\d*\.?\d+)")
#: The local sandbox for the trials; LiteLLM (which Harbor imports) reads its bundled cost map
#: instead of fetching one; the published config requires OPENAI_API_KEY to be set.
RUN_ENV = {
    "OSMOSIS_HARBOR_ENV": "local",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "OPENAI_API_KEY": "sk-unused-by-the-scripted-policy",
}

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get(TEMPLATE_ENV),
        reason=(
            f"opt-in: set {TEMPLATE_ENV} to a checkout of Osmosis-AI/workspace-template to run "
            f"its {ROLLOUT} rollout unmodified"
        ),
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("harbor") is None
        or importlib.util.find_spec("strands") is None
        or shutil.which("unshare") is None,
        reason="needs harbor, strands (pip install 'osmosis-ai[harbor,strands]') and util-linux "
        "(the local sandbox)",
    ),
]


def decimal_multiplier(body: Mapping[str, Any]) -> Reply:
    """Calls ``multiply`` with the prompt's two values (``val1 = x`` / ``val2 = y``, decimals),
    then answers ``#### <the tool's result>``."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    if messages and messages[-1].get("role") == "tool":
        return Reply(content=f"#### {message_text(messages[-1]).strip()}")
    values = [float(v) for v in _VALUE.findall(last_user_text(body))[:2]]
    if len(values) < 2:
        return Reply(content="I need two values to multiply.")
    return Reply(
        tool_calls=(ToolCall(name="multiply", arguments={"a": values[0], "b": values[1]}),)
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A copy of the checkout (its git history included), so the published files stay as they
    are and nothing the runs write lands in the checkout."""
    source = Path(os.environ[TEMPLATE_ENV]).expanduser().resolve()
    rollout = source / "rollouts" / ROLLOUT
    for required in (rollout / "main.py", source / CONFIG, source / "data" / "multiply.jsonl"):
        if not required.is_file():
            pytest.fail(f"{TEMPLATE_ENV}={source} has no {required.relative_to(source)}")
    ws = tmp_path / "workspace-template"
    shutil.copytree(source, ws, symlinks=True, ignore=shutil.ignore_patterns(".venv", ".osmosis"))
    if not (ws / ".git").exists():  # eval run records the workspace's git state
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def _published_files(ws: Path) -> dict[str, bytes]:
    rollout = ws / "rollouts" / ROLLOUT
    return {
        str(p.relative_to(ws)): p.read_bytes()
        for p in sorted(rollout.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def _expected(ws: Path) -> list[str]:
    rows = read_jsonl(ws / "data" / "multiply.jsonl")[:ROWS]
    return [str(row["ground_truth"]) for row in rows]


def test_eval_run_scores_the_published_rollout(workspace: Path, tmp_path: Path) -> None:
    before = _published_files(workspace)
    with ScriptedPolicyServer(decimal_multiplier, max_recorded=0) as policy:
        done = osmosis(
            "--json", "eval", "run", CONFIG, "--limit", str(ROWS), "--name", "published",
            "--base-url", policy.url, "--model", "scripted",
            cwd=workspace, home=tmp_path / "home", env=RUN_ENV, timeout=600,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    resource = json.loads(done.stdout)["resource"]
    assert resource["succeeded"] == ROWS, resource
    index = read_jsonl(workspace / ".osmosis" / "evals" / "published" / "index.jsonl")
    assert [(i["status"], i["reward"]) for i in index] == [("success", 1.0)] * ROWS
    assert _published_files(workspace) == before  # ran as published


def _wait_healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    # The prewarm lifespan builds and installs the bundle before the server answers.
    deadline = time.monotonic() + 300
    while True:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"{url} never became healthy\n{log.read_text()}"
        time.sleep(0.2)


async def _score(url: str, ws: Path) -> list[tuple[str, float | None]]:
    rows = read_jsonl(ws / "data" / "multiply.jsonl")[:ROWS]
    results: list[tuple[str, float | None]] = []
    with ScriptedPolicyServer(decimal_multiplier, max_recorded=0) as policy:
        async with RolloutClient(url=url) as client:
            for index, row in enumerate(rows):
                rollout_id = f"published-{index}"
                result = await client.run_rollout(
                    [
                        {"role": "system", "content": row["system_prompt"]},
                        {"role": "user", "content": row["user_prompt"]},
                    ],
                    policy.chat_completions_url(rollout_id),
                    rollout_id,
                    label=str(row["ground_truth"]),
                )
                sample = result.sample
                results.append((str(result.status), sample.reward if sample else None))
    return results


def test_rollout_serve_serves_the_published_rollout(workspace: Path, tmp_path: Path) -> None:
    before = _published_files(workspace)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [OSMOSIS, "rollout", "serve", f"rollouts/{ROLLOUT}", "--port", str(port)],
            cwd=workspace,
            env={**os.environ, **RUN_ENV, "OSMOSIS_HOME": str(tmp_path / "home"), "NO_COLOR": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        _wait_healthy(process, url, log)
        health = httpx.get(f"{url}/health", timeout=10).json()
        scores = asyncio.run(_score(url, workspace))
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    output = log.read_text()
    assert scores == [("success", 1.0)] * ROWS, output[-5000:]
    assert health["chat_endpoint"]["environment"] == "local", health
    assert f"on http://127.0.0.1:{port}" in output, output
    assert _published_files(workspace) == before
