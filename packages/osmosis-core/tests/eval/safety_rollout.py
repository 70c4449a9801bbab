"""A rollout project whose workflow is append-only, or breaks it on purpose, per dataset row.

Each row's prompt names a mode (``[mode=<name>]``). The workflow asks the policy (which answers
a multiply task with a tool call, then ``#### <n>``), appends the tool result, then, before the
second call, does what the mode says to its history:

* ``safe``: nothing (append-only);
* ``tool_args_reformatted``: re-serialises the first call's tool arguments (``json.dumps``);
* ``reasoning_dropped``: drops the first response's ``reasoning_content``;
* ``history_edited``: edits the user message (message 1);
* ``history_truncated``: drops the user message (message 1);
* ``system_changed``: changes the system prompt;
* ``subagents``: first runs two independent sub-agent calls (their own system prompts), then the
  main conversation, unchanged (append-only: three threads).
"""

from __future__ import annotations

import json
from pathlib import Path

MODES = (
    "safe",
    "tool_args_reformatted",
    "reasoning_dropped",
    "history_edited",
    "history_truncated",
    "system_changed",
    "subagents",
)

MAIN_PY = r"""
import json
import re

import httpx

from osmosis_ai.rollout import AgentWorkflow, Grader, LocalBackend, get_rollout_context
from osmosis_ai.rollout.server import create_rollout_server

TOOLS = [{"type": "function", "function": {"name": "multiply", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}}]


async def ask(messages):
    ctx = get_rollout_context()
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(
            ctx.chat_completions_url + "/chat/completions",
            json={"model": "osmosis-rollout", "messages": messages, "tools": TOOLS},
            headers={"authorization": f"Bearer {ctx.api_key}"},
        )
    response.raise_for_status()
    return response.json()["choices"][0]["message"]


class SafetyWorkflow(AgentWorkflow):
    async def run(self, ctx):
        prompt = [m for m in ctx.prompt if m.get("role") != "system"]
        mode = re.search(r"\[mode=(\w+)\]", prompt[-1]["content"]).group(1)
        if mode == "subagents":
            await ask([{"role": "system", "content": "You research."},
                       {"role": "user", "content": "research 4 times 5"}])
            await ask([{"role": "system", "content": "You write."},
                       {"role": "user", "content": "write up 6 times 7"}])
        messages = [{"role": "system", "content": "You multiply."}, *prompt]
        first = await ask(messages)
        messages.append(first)
        call = first["tool_calls"][0]
        args = json.loads(call["function"]["arguments"])
        messages.append({"role": "tool", "tool_call_id": call["id"],
                         "content": str(args["a"] * args["b"])})
        if mode == "tool_args_reformatted":
            call["function"]["arguments"] = json.dumps(args)
        elif mode == "reasoning_dropped":
            first.pop("reasoning_content", None)
        elif mode == "history_edited":
            messages[1] = {**messages[1], "content": messages[1]["content"] + " Be brief."}
        elif mode == "history_truncated":
            del messages[1]
        elif mode == "system_changed":
            messages[0] = {"role": "system", "content": "You multiply carefully."}
        messages.append(await ask(messages))
        return messages


class AnyGrader(Grader):
    async def grade(self, ctx):
        ctx.set_reward(1.0)


app = create_rollout_server(
    backend=LocalBackend(workflow=SafetyWorkflow, grader=AnyGrader), configure_logging=False
)
"""


def write_safety_workspace(root: Path, modes: tuple[str, ...] = MODES) -> Path:
    """Create the rollout, one row per mode and an eval config; returns the config path."""
    (root / "rollouts" / "safety").mkdir(parents=True)
    (root / "rollouts" / "safety" / "main.py").write_text(MAIN_PY)
    (root / "configs" / "eval").mkdir(parents=True)
    (root / "data").mkdir()
    rows = [
        {"user_prompt": f"What is {i + 2} times {i + 3}? [mode={mode}]", "ground_truth": "0"}
        for i, mode in enumerate(modes)
    ]
    (root / "data" / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = root / "configs" / "eval" / "safety.toml"
    config.write_text(
        "[experiment]\n"
        'rollout = "safety"\n'
        'entrypoint = "main.py"\n'
        'model_path = "mock"\n'
        'dataset = "rows.jsonl"\n'
        "\n[secrets]\nrequired = []\n"
    )
    return config
