"""Fill in a 0.3.8 scaffold the way its comments and 0.3.8's docs tell a user to."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class LegacyProject:
    """A workspace whose rollout 0.3.8's ``osmosis rollout init`` generated."""

    workspace: Path
    rollout_dir: Path
    eval_config: Path
    dataset: Path


OSMOSIS = str(Path(sys.executable).with_name("osmosis"))

#: The workflow body: the policy through the openai client at the rollout context's endpoint
#: (``get_rollout_context().chat_completions_url`` / ``.api_key``, as 0.3.8 documents), a
#: ``multiply`` tool run locally, and the conversation registered as the sample source.
WORKFLOW_BODY = """\
        import json

        import openai

        from osmosis_ai.rollout.context import SampleSource, get_rollout_context
        from osmosis_ai.rollout.types import RolloutSample

        rollout = get_rollout_context()
        assert rollout is not None
        client = openai.AsyncOpenAI(
            base_url=rollout.chat_completions_url, api_key=rollout.api_key or "unused"
        )
        tools = [{
            "type": "function",
            "function": {
                "name": "multiply",
                "description": "Multiply two integers.",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"],
                },
            },
        }]
        messages = list(ctx.prompt)
        for _ in range(4):
            response = await client.chat.completions.create(
                model="osmosis-rollout", messages=messages, tools=tools
            )
            message = response.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                break
            for call in message.tool_calls:
                args = json.loads(call.function.arguments)
                messages.append({
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": str(int(args["a"]) * int(args["b"])),
                })

        class Conversation(SampleSource):
            async def get_sample(self) -> RolloutSample:
                return RolloutSample(messages=messages)

        rollout.set_sample_source(Conversation())
"""

GRADER_BODY = """\
        answer = ""
        for message in reversed(ctx.sample.messages):
            if message.get("role") == "assistant" and message.get("content"):
                answer = str(message["content"]).rsplit("####", 1)[-1].strip()
                break
        ctx.set_reward(1.0 if answer == str(ctx.label).strip() else 0.0)
"""

ROWS = [(-267, 13), (3880, 982), (-893, 108)]


def fill_in_scaffold(main_py: Path) -> None:
    """Replace the scaffold's ``raise NotImplementedError(...)`` and ``set_reward(0.0)``."""
    source = main_py.read_text(encoding="utf-8")
    start = source.index("        raise NotImplementedError(")
    end = source.index("        )\n", start) + len("        )\n")
    source = source[:start] + WORKFLOW_BODY + source[end:]
    assert source.count("        ctx.set_reward(0.0)\n") == 1, source
    source = source.replace("        ctx.set_reward(0.0)\n", GRADER_BODY)
    main_py.write_text(source, encoding="utf-8")


def write_dataset(path: Path) -> Path:
    lines = [
        {
            "system_prompt": "Use the multiply tool; end with `#### <number>`.",
            "user_prompt": f"What is {a} multiplied by {b}?",
            "ground_truth": str(a * b),
        }
        for a, b in ROWS
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def osmosis(
    *args: str, cwd: Path, home: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """This repository's ``osmosis`` CLI (the one next to the test interpreter)."""
    return subprocess.run(
        [OSMOSIS, *args],
        cwd=cwd,
        env={**os.environ, "OSMOSIS_HOME": str(home), "NO_COLOR": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
