"""``osmosis eval run --env inspect:...`` and ``--env harbor:...`` through the real CLI (the
adapters themselves are also tested through a served rollout server in
``packages/osmosis-environments/tests/inspect/`` and
``packages/osmosis-harbor/tests/integrations/environments/``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from eval_support import Cli, read_jsonl

INSPECT_FIXTURES = (
    Path(__file__).parents[2] / "packages/osmosis-environments/tests/inspect/fixtures"
)

#: The policy for the Inspect task: call `add`, then answer with its result (row 2 wrongly).
RESPONDER = """
import re


def respond(body):
    messages = body["messages"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    tools = [m for m in messages if m["role"] == "tool"]
    if not tools:
        a, b = (int(x) for x in re.findall(r"\\d+", question))
        return {"tool_calls": [{"name": "add", "arguments": {"a": a, "b": b}}]}
    return "14" if "7 + 8" in question else str(tools[-1]["content"])
"""


def test_eval_run_env_inspect_task_rewards_and_scorer_metrics(cli: Cli, tmp_path: Path) -> None:
    from inspect_ai.scorer import value_to_float

    ws = tmp_path / "ws"
    assert cli.run("init", str(ws), cwd=tmp_path).code == 0
    for name in ("arith.py", "arith.jsonl"):
        shutil.copy(INSPECT_FIXTURES / name, ws / name)
    (ws / "responder.py").write_text(RESPONDER)
    result = cli.run(
        "--json", "eval", "run", "--env", "inspect:arith.py@addition", "--model", "mock",
        "--mock-script", "responder.py", "--name", "inspect", cwd=ws,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    rows = {r["source_row_index"]: r for r in read_jsonl(ws / ".osmosis/evals/inspect/index.jsonl")}
    # Inspect's own mapping of its scorers' values: match/includes give C or I.
    to_float = value_to_float()
    assert [rows[i]["reward"] for i in range(3)] == [to_float("C"), to_float("C"), to_float("I")]
    assert all(set(rows[i]["metrics"]) >= {"match", "includes"} for i in range(3))
    assert rows[2]["metrics"]["includes"] == 0.0


def test_eval_run_env_harbor_local_registry(cli: Cli, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert cli.run("init", str(ws), cwd=tmp_path).code == 0
    registry = ws / "registry"
    task = registry / "tasks" / "hello"
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\nWORKDIR /app\n")
    (task / "task.toml").write_text('schema_version = "1.3"\n[verifier]\ntimeout_sec = 60\n')
    (task / "instruction.md").write_text("Create /app/hello.txt containing hello\n")
    for sub, body in (
        ("solution/solve.sh", "echo hello > /app/hello.txt"),
        ("tests/test.sh", "grep -q hello /app/hello.txt && echo 1 > /logs/verifier/reward.txt"),
    ):
        (task / sub).parent.mkdir(parents=True, exist_ok=True)
        (task / sub).write_text(f"#!/bin/bash\n{body}\n")
        (task / sub).chmod(0o755)
    datasets = [{"name": "demo", "version": "1.0", "description": "", "tasks": [
        {"name": "hello", "path": "tasks/hello"}]}]  # fmt: skip
    (registry / "registry.json").write_text(json.dumps(datasets))
    # A relative registry folder: the rollout server, started in another folder, finds it too.
    spec = "harbor:demo@1.0?registry=registry&agent=oracle&sandbox=local"
    result = cli.run(
        "--json", "eval", "run", "--env", spec, "--model", "mock", "--name", "hb", cwd=ws
    )
    assert result.code == 0, result.stderr
    (row,) = read_jsonl(ws / ".osmosis/evals/hb/index.jsonl")
    assert (row["status"], row["reward"]) == ("success", 1.0)


#: The policy for the sandboxed task: s1 writes the file with `bash`, s2 writes the wrong word
#: with `python`; then each answers "done". Both tools run in Harbor's local sandbox.
SANDBOX_RESPONDER = """
def respond(body):
    messages = body["messages"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    if any(m["role"] == "tool" for m in messages):
        return "done: ready" if "Python" not in question else "done"
    if "Python" in question:
        code = "open('ready.txt', 'w').write('steady')"
        return {"tool_calls": [{"name": "python", "arguments": {"code": code}}]}
    cmd = "cat seed.txt prepared.txt > seen.txt && echo ready > ready.txt && cat seen.txt"
    # bash's argument is `cmd` in older Inspect and `command` in newer: read it off the offer.
    (tool,) = [t for t in body["tools"] if t["function"]["name"] == "bash"]
    (argument,) = tool["function"]["parameters"]["properties"]
    return {"tool_calls": [{"name": "bash", "arguments": {argument: cmd}}]}
"""


def test_eval_run_env_inspect_sandboxed_task_on_harbors_local_sandbox(
    cli: Cli, tmp_path: Path
) -> None:
    """A task with sandbox='docker' (no compose file or Dockerfile): its bash()/python() tools,
    the sample's files and setup script, and a scorer calling sandbox().exec all run in Harbor's
    local sandbox, one per sample; the rewards are Inspect's mapping of that scorer's verdicts."""
    from inspect_ai.scorer import value_to_float

    ws = tmp_path / "ws"
    assert cli.run("init", str(ws), cwd=tmp_path).code == 0
    shutil.copy(INSPECT_FIXTURES / "sandboxed.py", ws / "sandboxed.py")
    (ws / "responder.py").write_text(SANDBOX_RESPONDER)
    result = cli.run(
        "--json", "eval", "run", "--env", "inspect:sandboxed.py@shell", "--model", "mock",
        "--mock-script", "responder.py", "--name", "sandboxed", cwd=ws,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    rows = read_jsonl(ws / ".osmosis/evals/sandboxed/index.jsonl")
    by_prompt = {"Python" in r["prompt"]: r for r in rows}
    to_float = value_to_float()
    assert by_prompt[False]["reward"] == to_float("C")  # bash wrote "ready"
    assert by_prompt[True]["reward"] == to_float("I")  # python wrote "steady"
    assert by_prompt[False]["metrics"]["includes"] == 1.0
    assert by_prompt[True]["metrics"]["includes"] == 0.0
    # The sample's files and setup were in the sandbox when the tool ran; the host never saw them.
    trajectory = json.loads((ws / ".osmosis/evals/sandboxed" / by_prompt[False][
        "trajectory_filename"]).read_text())  # fmt: skip
    tool_outputs = [s for s in trajectory["steps"] if "seeded" in json.dumps(s)]
    assert any("prepared" in json.dumps(s) for s in tool_outputs), trajectory["steps"]
    assert not (ws / "ready.txt").exists()
    assert not Path("/inspect/ready.txt").exists()
