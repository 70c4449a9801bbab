"""Item 11: ``--model mock`` scripted for the user's own task, without writing a server.

The ``multiply-local-plain`` template is applied for real and evaluated by the real CLI; the
offline policy answers from a reply script (``--mock-script``): a JSONL file keyed by dataset row
or by prompt, or a Python file with ``respond(body)``.
"""

from __future__ import annotations

import json
from pathlib import Path

from eval_support import Cli, read_jsonl

TEMPLATE = "multiply-local-plain"
CONFIG = f"configs/eval/{TEMPLATE}.toml"


def _workspace(cli: Cli, tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    assert cli.run("init", str(ws), cwd=tmp_path).code == 0
    applied = cli.run("template", "apply", TEMPLATE, cwd=ws)
    assert applied.code == 0, applied.stderr
    return ws


def _rows(ws: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in (ws / "data" / "multiply.jsonl").read_text().splitlines()]


def test_a_jsonl_script_answers_per_row_and_per_prompt(cli: Cli, tmp_path: Path) -> None:
    ws = _workspace(cli, tmp_path)
    rows = _rows(ws)
    first = rows[0]["user_prompt"]
    a, b = (
        int(x) for x in first.removeprefix("What is ").removesuffix("?").split(" multiplied by ")
    )
    script = [
        # row 0: call the tool, then answer right (reward 1)
        {"row": 0, "replies": [
            {"tool_calls": [{"name": "multiply", "arguments": {"a": a, "b": b}}]},
            f"#### {rows[0]['ground_truth']}",
        ]},
        # row 1, keyed by its prompt: a wrong answer (reward 0)
        {"prompt": rows[1]["user_prompt"], "replies": ["#### 0"]},
        # row 2 has no line and there is no default: the call is refused, saying why
    ]  # fmt: skip
    (ws / "replies.jsonl").write_text("\n".join(json.dumps(line) for line in script) + "\n")
    result = cli.run(
        "--json", "eval", "run", CONFIG, "--mock-script", "replies.jsonl", "--rows", "0-2",
        "--name", "scripted", cwd=ws,
    )  # fmt: skip
    assert result.code == 1, result.stderr  # partial: row 2 failed
    index = {
        i["source_row_index"]: i for i in read_jsonl(ws / ".osmosis/evals/scripted/index.jsonl")
    }
    assert (index[0]["status"], index[0]["reward"], index[0]["policy_calls"]) == ("success", 1.0, 2)
    assert (index[1]["status"], index[1]["reward"], index[1]["answer"]) == (
        "success",
        0.0,
        "#### 0",
    )
    assert index[2]["status"] == "failed"
    assert index[2]["error_type"] == "http_error"
    assert (
        f"reply script replies.jsonl has no replies for the prompt {rows[2]['user_prompt']!r}"
        in index[2]["error_message"]
    )
    assert f"--model mock uses the reply script {ws / 'replies.jsonl'}" in result.stderr
    manifest = json.loads((ws / ".osmosis/evals/scripted/manifest.json").read_text())
    locked = manifest["inputs"]["model"]
    assert locked["model"] == "mock"
    assert locked["mock_script"]["path"] == str(ws / "replies.jsonl")


RESPONDER = '''
import re


def respond(body):
    """Multiply the two numbers of the prompt with the tool, then answer."""
    messages = body["messages"]
    a, b = (int(x) for x in re.findall(r"-?\\d+", messages[1]["content"])[:2])
    if messages[-1]["role"] == "tool":
        return f"#### {messages[-1]['content']}"
    return {"tool_calls": [{"name": "multiply", "arguments": {"a": a, "b": b}}]}
'''


def test_a_python_responder_scripts_every_row(cli: Cli, tmp_path: Path) -> None:
    ws = _workspace(cli, tmp_path)
    (ws / "policy.py").write_text(RESPONDER)
    result = cli.run(
        "--json", "eval", "run", CONFIG, "--mock-script", "policy.py", "--limit", "3",
        "--name", "py", cwd=ws,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    resource = result.json()["resource"]
    assert (resource["succeeded"], resource["failed"]) == (3, 0)
    assert resource["metrics"]["reward_stats"]["mean"] == 1.0
    # item 9: the trajectory names the SDK users installed (osmosis-ai), as 0.3's did
    from osmosis_ai.versions import sdk_version

    run = Path(resource["output_path"])
    first = json.loads((run / "index.jsonl").read_text().splitlines()[0])
    trajectory = json.loads((run / first["trajectory_filename"]).read_text())
    assert trajectory["agent"] == {"name": "osmosis-rollout-sdk", "version": sdk_version()}


def test_a_broken_script_is_refused_before_anything_starts(cli: Cli, tmp_path: Path) -> None:
    ws = _workspace(cli, tmp_path)
    (ws / "replies.jsonl").write_text('{"row": 0, "replies": ["ok"]}\n{"row": 0, "replies": [}\n')
    bad_line = cli.run("--json", "eval", "run", CONFIG, "--mock-script", "replies.jsonl", cwd=ws)
    assert bad_line.code == 1, bad_line.stderr
    assert bad_line.error()["code"] == "VALIDATION"
    assert bad_line.error()["message"].startswith(f"{ws / 'replies.jsonl'}:2: not valid JSON")
    (ws / "replies.jsonl").write_text('{"row": 999, "replies": ["ok"]}\n')
    out_of_range = cli.run(
        "--json", "eval", "run", CONFIG, "--mock-script", "replies.jsonl", cwd=ws
    )
    assert out_of_range.code == 1
    assert (
        '"row" must be a 0-based dataset row from 0 to 199, got 999'
        in out_of_range.error()["message"]
    )
    other_model = cli.run(
        "--json", "eval", "run", CONFIG, "--mock-script", "replies.jsonl",
        "--model", "openai/gpt-4o-mini", cwd=ws,
    )  # fmt: skip
    assert other_model.code == 1
    assert "use it with --model mock (or without --model)" in other_model.error()["message"]
    assert not (ws / ".osmosis" / "evals").exists() or not any(
        (ws / ".osmosis" / "evals").iterdir()
    )
