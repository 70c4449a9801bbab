"""Reply scripts (``osmosis_ai.testing.script``): the format, its errors, and a real server
answering from one (the eval's ``--mock-script`` is tested end to end in tests-integration)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from osmosis_ai.testing import (
    ErrorReply,
    Reply,
    ReplyScriptError,
    ScriptedPolicyServer,
    ToolCall,
    load_reply_script,
    reply_from_json,
)

ROWS = [[{"role": "system", "content": "be brief"}, {"role": "user", "content": "2 * 3?"}]]


def _write(tmp_path: Path, *lines: object) -> Path:
    path = tmp_path / "replies.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def _body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "messages": list(messages)}


def _answer(path: Path, body: dict[str, Any]) -> Reply | ErrorReply:
    return asyncio.run(load_reply_script(path, rows=ROWS)(body))


def test_reply_json_shapes() -> None:
    assert reply_from_json("hi") == Reply(content="hi")
    call = reply_from_json({"tool_calls": [{"name": "f", "arguments": {"x": 1}, "id": "c1"}]})
    assert call == Reply(tool_calls=(ToolCall(name="f", arguments={"x": 1}, id="c1"),))
    error = reply_from_json({"error": 503, "body": "busy"})
    assert (error.status, error.body) == (503, "busy")  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="unknown reply key"):
        reply_from_json({"text": "hi"})
    with pytest.raises(ValueError, match="HTTP status from 400 to 599"):
        reply_from_json({"error": 200})


def test_turns_follow_the_assistant_messages_in_the_history(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {"row": 0, "replies": [{"tool_calls": [{"name": "mul", "arguments": {}}]}, "6"]},
        {"replies": ["default"]},
    )
    user = ROWS[0][1]
    first = _answer(path, _body(ROWS[0][0], user))
    assert isinstance(first, Reply)
    assert first.tool_calls[0].name == "mul"
    assistant = {"role": "assistant", "content": None}
    assert _answer(path, _body(user, assistant, {"role": "tool", "content": "6"})) == Reply("6")
    past_end = _answer(path, _body(user, assistant, assistant))
    assert isinstance(past_end, ErrorReply)
    assert past_end.status == 400
    assert "has 2 replies for the prompt '2 * 3?', and the agent asked for turn 3" in str(
        past_end.body
    )
    other = _body({"role": "user", "content": "something else"})
    assert _answer(path, other) == Reply(content="default")


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([{"row": 0, "replies": ["a"]}, {"prompt": "2 * 3?", "replies": ["b"]}], "already has"),
        ([{"row": 1, "replies": ["a"]}], "from 0 to 0, got 1"),
        ([{"row": 0, "prompt": "x", "replies": ["a"]}], "at most one of"),
        ([{"prompt": "x", "replies": []}], "non-empty list"),
        ([{"replies": ["a"]}, {"replies": ["b"]}], "a second default line"),
    ],
)
def test_a_bad_script_names_the_line_and_the_fix(
    tmp_path: Path, lines: list[object], message: str
) -> None:
    path = _write(tmp_path, *lines)
    with pytest.raises(ReplyScriptError, match=message) as caught:
        load_reply_script(path, rows=ROWS)
    assert str(caught.value).startswith(f"{path}:")


def test_row_keys_need_the_dataset(tmp_path: Path) -> None:
    with pytest.raises(ReplyScriptError, match='key the line by "prompt" instead'):
        load_reply_script(_write(tmp_path, {"row": 0, "replies": ["a"]}))


def test_a_python_script_names_its_function(tmp_path: Path) -> None:
    (tmp_path / "policy.py").write_text(
        "async def answer(body):\n    return {'content': body['messages'][-1]['content'] * 2}\n"
    )
    responder = load_reply_script(f"{tmp_path / 'policy.py'}:answer")
    assert asyncio.run(responder(_body({"role": "user", "content": "ab"}))) == Reply("abab")
    with pytest.raises(ReplyScriptError, match=r"defines no function respond\(body\)"):
        load_reply_script(tmp_path / "policy.py")


async def test_the_server_answers_from_a_script(tmp_path: Path) -> None:
    path = _write(tmp_path, {"prompt": "2 * 3?", "replies": ["#### 6"]})
    async with (
        ScriptedPolicyServer(load_reply_script(path)) as server,
        httpx.AsyncClient() as client,
    ):
        ok = await client.post(f"{server.url}/chat/completions", json=_body(*ROWS[0]))
        missing = await client.post(
            f"{server.url}/chat/completions", json=_body({"role": "user", "content": "?"})
        )
    assert ok.json()["choices"][0]["message"]["content"] == "#### 6"
    assert missing.status_code == 400
    assert "has no replies for the prompt '?'" in missing.json()["error"]["message"]
