"""The agent: one chat-completions call to the policy being trained or evaluated.

The policy's URL and key come from the running rollout (`get_rollout_context()`); any
OpenAI-compatible client works. Real agents usually use a framework integration (see the
multiply templates); this one stays minimal so the grader is the point.
"""

from openai import AsyncOpenAI

from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext, get_rollout_context


class AnswerWorkflow(AgentWorkflow):
    async def run(self, ctx: AgentWorkflowContext) -> list[dict[str, str]]:
        rollout = get_rollout_context()
        if rollout is None or not rollout.chat_completions_url:
            raise RuntimeError("no active rollout: run this workflow through a rollout server")
        async with AsyncOpenAI(
            base_url=rollout.chat_completions_url, api_key=rollout.api_key or "unused"
        ) as client:
            reply = await client.chat.completions.create(model="policy", messages=ctx.prompt)
        answer = reply.choices[0].message.content or ""
        return [*ctx.prompt, {"role": "assistant", "content": answer}]
