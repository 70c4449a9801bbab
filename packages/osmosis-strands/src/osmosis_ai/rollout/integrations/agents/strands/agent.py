"""``OsmosisStrandsAgent``: ``strands.Agent`` plus osmosis sample capture.

It is a drop-in: every argument of ``strands.Agent`` is passed through untouched (the signature
grows with each Strands release, so it is never re-declared), except that

* ``messages`` may be the rollout prompt as is (``messages=ctx.prompt``): it is copied, string
  contents become content blocks, system messages move into ``system_prompt`` and OpenAI tool
  traffic becomes ``toolUse``/``toolResult`` blocks;
* ``callback_handler`` defaults to ``None``: Strands' default handler prints every streamed token
  to stdout, which a rollout server running hundreds of agents must not do;
* with an :class:`OsmosisRolloutModel` the agent registers the rollout's one sample source and
  records every policy call's model and usage for the trajectory. With any other model it is a
  plain Strands agent.

Policy failures surface as :class:`~osmosis_ai.errors.PolicyHTTPError` (``http_error``)
or :class:`~osmosis_ai.errors.PolicyTimeoutError` (``timeout``) instead of Strands' generic
``EventLoopException``, so the rollout is reported as an infrastructure failure, not reward 0.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from strands import Agent

from osmosis_ai.rollout.integrations.spi import (
    NoActiveRolloutError,
    PolicyHTTPError,
    get_rollout_context,
    translate_policy_error,
)

from .model import OsmosisRolloutModel
from .prompt import (
    merge_system_prompt,
    split_prompt,
)
from .sample import (
    SampleCapture,
    StrandsSampleSource,
)

# strands.Agent's leading positional parameters, in order (stable from 1.0 to 1.62).
_POSITIONAL = ("model", "messages", "tools", "system_prompt")
# Raised by the model and wrapped by Strands into EventLoopException; re-raised as themselves so
# that the failure category (http_error, timeout) and the how-to-run message survive.
_POLICY_ERRORS = (PolicyHTTPError, NoActiveRolloutError)  # PolicyTimeoutError included


class OsmosisStrandsAgent(Agent):
    """A ``strands.Agent`` whose conversation becomes the rollout's sample.

    Typical use inside ``AgentWorkflow.run``::

        agent = OsmosisStrandsAgent(
            name="calculator", model=config.model, tools=config.tools,
            messages=ctx.prompt, callback_handler=None,
        )
        for _ in range(8):
            await agent.invoke_async()
            if done(agent.messages[-1]):
                break

    Construct one per rollout. An agent built outside any rollout (e.g. at import time) is bound
    to the rollout it is first invoked in; Strands refuses concurrent invocations of one agent
    instance, so a shared agent only serves rollouts one at a time.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        for name, value in zip(_POSITIONAL, args, strict=False):
            if name in kwargs:
                raise TypeError(f"OsmosisStrandsAgent() got multiple values for argument {name!r}")
            kwargs[name] = value
        rest = args[len(_POSITIONAL) :]

        messages = kwargs.get("messages")
        if messages is not None:
            system, converted = split_prompt(messages)
            kwargs["messages"] = converted
            if system:
                kwargs["system_prompt"] = merge_system_prompt(kwargs.get("system_prompt"), system)
        kwargs.setdefault("callback_handler", None)

        capture: SampleCapture | None = None
        model = kwargs.get("model")
        if isinstance(model, OsmosisRolloutModel):
            capture = SampleCapture()
            kwargs["model"] = model.bound_to(capture)
        self._osmosis_capture = capture

        super().__init__(*rest, **kwargs)

        if capture is not None:
            capture.attach(self)
            ctx = get_rollout_context()
            if ctx is not None:
                capture.bind(ctx)

    @property
    def sample_source(self) -> StrandsSampleSource | None:
        """The sample source this agent registered on the current rollout, if any."""
        ctx = get_rollout_context()
        source = ctx.sample_source if ctx is not None else None
        if isinstance(source, StrandsSampleSource) and source.agent is self:
            return source
        return None

    async def stream_async(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:  # pyright: ignore[reportIncompatibleMethodOverride]
        """``Agent.stream_async`` with policy failures unwrapped from ``EventLoopException``."""
        try:
            async for event in super().stream_async(*args, **kwargs):
                yield event
        except Exception as exc:
            policy_error = _policy_cause(exc)
            if policy_error is None:
                raise
            raise policy_error from exc


# 0.3 defined the public classes in the package module itself; report that path.
OsmosisStrandsAgent.__module__ = "osmosis_ai.rollout.integrations.agents.strands"


def _policy_cause(exc: BaseException) -> BaseException | None:
    """The policy failure that ``exc`` wraps, if any (Strands wraps model errors).

    Besides our own errors, a ``ModelThrottledException`` that outlived Strands' retries (the
    policy kept answering HTTP 429) becomes a :class:`PolicyHTTPError`: an overloaded policy is
    an infrastructure failure, not the agent's.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, _POLICY_ERRORS):
            return current
        if type(current).__name__ == "ModelThrottledException" and current.__cause__ is not None:
            translated = translate_policy_error(current.__cause__, "")
            if translated is not None:
                return translated
        seen.add(id(current))
        current = current.__cause__ or getattr(current, "original_exception", None)
    return None
