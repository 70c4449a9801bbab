"""The scripted policy server playing a judge: verdict shapes, Retry-After headers, in-flight count."""

from __future__ import annotations

import asyncio
import json

import httpx

from osmosis_ai.testing import ScriptedPolicyServer, error_reply
from osmosis_ai.testing.judge import candidate_text, judge_verdict, scripted_judge

JUDGE_PROMPT = "Rubric: x\n\n<<<BEGIN_CANDIDATE_OUTPUT>>>\nmy answer\n<<<END_CANDIDATE_OUTPUT>>>"


def _body(**extra: object) -> dict[str, object]:
    return {"model": "m", "messages": [{"role": "user", "content": JUDGE_PROMPT}], **extra}


def test_candidate_text_reads_the_graded_output() -> None:
    assert candidate_text(_body()) == "my answer"
    assert candidate_text({"messages": [{"role": "user", "content": "hi"}]}) == ""


async def test_scripted_judge_answers_in_the_requested_shape() -> None:
    seen: list[str] = []

    def decide(answer: str) -> float:
        seen.append(answer)
        return 0.5

    tools = [{"type": "function", "function": {"name": "grade_it", "parameters": {}}}]
    async with ScriptedPolicyServer(scripted_judge(decide)) as s, httpx.AsyncClient() as client:
        text = (await client.post(f"{s.url}/chat/completions", json=_body())).json()
        tool = (await client.post(f"{s.url}/chat/completions", json=_body(tools=tools))).json()
    assert seen == ["my answer", "my answer"]
    assert json.loads(text["choices"][0]["message"]["content"])["score"] == 0.5
    call = tool["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "grade_it"
    assert json.loads(call["arguments"])["score"] == 0.5


async def test_error_reply_headers_and_max_in_flight() -> None:
    script = scripted_judge(
        lambda answer: (
            error_reply(429, headers={"Retry-After": "3"})
            if answer == "my answer"
            else judge_verdict(1.0)
        )
    )
    async with ScriptedPolicyServer(script) as s, httpx.AsyncClient() as client:
        limited = await client.post(f"{s.url}/chat/completions", json=_body())
        slow = ScriptedPolicyServer([judge_verdict(1.0, delay=0.1)] * 3)
        async with slow:
            await asyncio.gather(
                *(
                    client.post(f"{slow.url}/rollouts/r{i}/chat/completions", json=_body())
                    for i in range(3)
                )
            )
            assert slow.max_in_flight == 3
            assert slow.in_flight == 0
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "3"
