"""A tiny rollout project (core only) written into a temp workspace for controller tests.

Behaviour is chosen by ``TINY_MODE`` in the eval config's ``[env]``:

* ``multiply`` (default): asks the policy, runs the ``multiply`` tool call it gets, asks again,
  and the grader compares ``#### <n>`` in the last message with the label;
* ``one-call``: a single policy call, reward 1.0 (for throughput);
* ``noop``: no policy call, reward 1.0;
* ``preloaded``: like ``noop``, and answers which of ``openai`` and its chat resource the
  server process had imported when the rollout started;
* ``blocked``: like ``noop``, but on rows whose prompt contains ``block`` the workflow first
  reads one byte from the FIFO ``TINY_BLOCK_FIFO`` without awaiting: it blocks its event loop
  (the agent loop) until the test writes it;
* ``crash-on-start``: the entrypoint exits at import with a message on stderr;
* ``crash-on-rollout``: the server process dies during the first rollout;
* ``slow``: like ``multiply`` but sleeps ``TINY_SLEEP`` seconds first;
* ``crash-after-call``: like ``multiply``, but the workflow raises after its first policy call
  on rows whose prompt contains ``TINY_CRASH_PROMPT`` (a partial transcript is in ``llm_calls.jsonl``).

``TINY_TOOL_ERROR_PROMPT``: on rows whose prompt contains it, every tool call is also recorded
as a tool error (``record_tool_error``), as the framework integrations record a tool that raised.

``TINY_METRICS=1`` makes the grader set two metrics (``used_tool``, ``exact``) and an explanation
(``ctx.sample.extra_fields["explanation"]``), as a rubric or an LLM judge would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAIN_PY = r"""
import asyncio
import json
import os
import re
import sys

import httpx

from osmosis_ai.rollout import AgentWorkflow, Grader, LocalBackend, get_rollout_context
from osmosis_ai.rollout.errors import PolicyHTTPError
from osmosis_ai.rollout.server import create_rollout_server

MODE = os.environ.get("TINY_MODE", "multiply")
if MODE == "crash-on-start":
    print("tiny rollout: refusing to start (TINY_MODE=crash-on-start)", file=sys.stderr, flush=True)
    raise SystemExit(3)

TOOLS = [{"type": "function", "function": {"name": "multiply", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"]}}}]
_client = None


def client():
    global _client
    if _client is None:
        _client = httpx.AsyncClient(timeout=30)
    return _client


async def ask(messages, stream=False):
    ctx = get_rollout_context()
    body = {"model": "osmosis-rollout", "messages": messages, "tools": TOOLS, "temperature": 0.5}
    url = ctx.chat_completions_url + "/chat/completions"
    headers = {"authorization": f"Bearer {ctx.api_key}"}
    response = await client().post(url, json=body, headers=headers)
    if response.status_code != 200:
        raise PolicyHTTPError(response.status_code, response.text, url)
    data = response.json()
    message = dict(data["choices"][0]["message"])
    message["usage"] = data.get("usage")
    message["model"] = data.get("model")
    return message


class TinyWorkflow(AgentWorkflow):
    async def run(self, ctx):
        messages = list(ctx.prompt)
        if MODE == "noop":
            return messages + [{"role": "assistant", "content": "noop"}]
        if MODE == "blocked":
            if "block" in json.dumps(ctx.prompt):
                with open(os.environ["TINY_BLOCK_FIFO"], "rb") as fifo:  # blocks the loop
                    fifo.read(1)
            return messages + [{"role": "assistant", "content": "noop"}]
        if MODE == "preloaded":
            loaded = [m for m in ("openai", "openai.resources.chat") if m in sys.modules]
            return messages + [{"role": "assistant", "content": json.dumps(loaded)}]
        if MODE == "crash-on-rollout":
            print("tiny rollout: crashing the server on purpose", file=sys.stderr, flush=True)
            os._exit(9)
        if MODE == "slow":
            await asyncio.sleep(float(os.environ.get("TINY_SLEEP", "0.2")))
        for _ in range(1 if MODE == "one-call" else 4):
            message = await ask(messages)
            messages.append(message)
            crash_on = os.environ.get("TINY_CRASH_PROMPT")
            if MODE == "crash-after-call" and crash_on and crash_on in json.dumps(ctx.prompt):
                raise RuntimeError("tiny rollout: crashing after a policy call on purpose")
            calls = message.get("tool_calls") or []
            if not calls:
                break
            for call in calls:
                args = json.loads(call["function"]["arguments"])
                tool_error_on = os.environ.get("TINY_TOOL_ERROR_PROMPT")
                if tool_error_on and tool_error_on in json.dumps(ctx.prompt):
                    from osmosis_ai.rollout.integrations.spi import record_tool_error

                    record_tool_error("multiply", ValueError("multiply is flaky"), call_id=call["id"])
                messages.append({"role": "tool", "tool_call_id": call["id"],
                                 "content": str(args["a"] * args["b"])})
        return messages


class TinyGrader(Grader):
    async def grade(self, ctx):
        if MODE in ("noop", "one-call", "preloaded", "blocked"):
            ctx.set_reward(1.0)
            return
        text = ctx.sample.messages[-1].get("content") or ""
        found = re.search(r"####\s*(-?\d+)", text)
        ok = found is not None and ctx.label is not None and int(found.group(1)) == int(float(ctx.label))
        ctx.set_reward(1.0 if ok else 0.0)
        if os.environ.get("TINY_METRICS") == "1":
            used_tool = any(m.get("role") == "tool" for m in ctx.sample.messages)
            ctx.sample.metrics = {"used_tool": 1.0 if used_tool else 0.0, "exact": 1.0 if ok else 0.0}
            ctx.sample.extra_fields["explanation"] = f"expected {ctx.label}, found {text[-12:]!r}"


app = create_rollout_server(
    backend=LocalBackend(workflow=TinyWorkflow, grader=TinyGrader,
                         max_concurrency=int(os.environ.get("TINY_CONCURRENCY", "16"))),
    configure_logging=False,
)
"""


def write_workspace(
    root: Path,
    *,
    rows: list[dict[str, Any]] | None = None,
    n_rows: int = 4,
    mode: str = "multiply",
    env: dict[str, str] | None = None,
    evaluation: str = "",
    model: str = "mock",
    core_path: Path | None = None,
) -> Path:
    """Create ``root/{rollouts/tiny,configs/eval/tiny.toml,data/rows.jsonl}``; returns the config.

    ``core_path`` gives the rollout its own ``pyproject.toml`` depending on that osmosis-core
    checkout, so ``--isolated`` can build ``rollouts/tiny/.venv`` with uv.
    """
    (root / "rollouts" / "tiny").mkdir(parents=True)
    (root / "rollouts" / "tiny" / "main.py").write_text(MAIN_PY)
    if core_path is not None:  # its own project, for `eval run --isolated` (uv run --project)
        (root / "rollouts" / "tiny" / "pyproject.toml").write_text(
            "[project]\n"
            'name = "tiny"\n'
            'version = "0.1.0"\n'
            'requires-python = ">=3.12"\n'
            'dependencies = ["osmosis-core[server]"]\n'
            "\n[tool.uv]\npackage = false\n"
            "\n[tool.uv.sources]\n"
            f'osmosis-core = {{ path = "{core_path}", editable = true }}\n'
        )
    (root / "configs" / "eval").mkdir(parents=True)
    (root / "data").mkdir()
    if rows is None:
        rows = [
            {
                "user_prompt": f"What is {i + 2} times {i + 3}?",
                "ground_truth": str((i + 2) * (i + 3)),
            }
            for i in range(n_rows)
        ]
    (root / "data" / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    all_env = {"TINY_MODE": mode, **(env or {})}
    env_lines = "".join(f'{k} = "{v}"\n' for k, v in all_env.items())
    config = root / "configs" / "eval" / "tiny.toml"
    config.write_text(
        "[experiment]\n"
        'rollout = "tiny"\n'
        'entrypoint = "main.py"\n'
        f'model_path = "{model}"\n'
        'dataset = "rows.jsonl"\n'
        "\n[evaluation]\n"
        f"{evaluation}\n"
        "\n[env]\n"
        f"{env_lines}"
        "\n[secrets]\nrequired = []\n"
    )
    return config
