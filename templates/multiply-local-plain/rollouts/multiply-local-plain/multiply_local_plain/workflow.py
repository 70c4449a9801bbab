"""The agent loop, written by hand on the `openai` client: no agent framework.

Each turn sends the conversation to the policy (`ctx.policy.client()`, an `AsyncOpenAI`
already addressed at this rollout's endpoint), runs the tool calls it asks for, and stops when
it answers without calling a tool. The returned message list is the sample the grader sees.
"""

from typing import Any

from multiply_local_plain.config import MultiplyConfig
from multiply_local_plain.config import config as default_config
from multiply_local_plain.tools import TOOLS, call_tool
from osmosis_ai.rollout import AgentWorkflow, AgentWorkflowContext


def assistant_message(message: Any) -> dict[str, Any]:
    """The chat-completions message to append to the history for one policy reply."""
    out: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            }
            for call in message.tool_calls
        ]
    return out


class MultiplyWorkflow(AgentWorkflow[MultiplyConfig]):
    async def run(self, ctx: AgentWorkflowContext[MultiplyConfig]) -> list[dict[str, Any]]:
        config = ctx.config or self.config or default_config
        client = ctx.policy.client()  # the policy being trained or evaluated
        messages = list(ctx.prompt)
        for _ in range(config.max_turns):
            response = await client.chat.completions.create(
                model=ctx.policy.model,
                messages=messages,
                tools=TOOLS,
                temperature=config.temperature,
                top_p=config.top_p,
                max_tokens=config.max_tokens,
            )
            message = response.choices[0].message
            messages.append(assistant_message(message))
            if not message.tool_calls:
                break
            for call in message.tool_calls:
                result = call_tool(call.function.name, call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        return messages
