"""``OsmosisRolloutModel``: a Strands ``Model`` that calls the policy of whichever rollout is running.

Rollout templates build their model (and often the whole agent config) at import time, long before
any rollout exists, and one rollout server runs hundreds of rollouts concurrently through that one
object. So the model holds only configuration; on **every** call it resolves the ambient
:class:`~osmosis_ai.rollout.RolloutContext` and delegates to a throw-away Strands ``OpenAIModel``
addressed at that rollout's ``chat_completions_url`` with its API key (the client underneath is
shared per event loop, see :mod:`osmosis_ai.rollout.policy`). Strands still does all request formatting and stream
parsing, so behaviour matches ``OpenAIModel`` on every supported Strands release.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncGenerator, AsyncIterable
from typing import TYPE_CHECKING, Any, Protocol

from strands.models import Model

from osmosis_ai.rollout.integrations.spi import (
    CallObserver,
    NoActiveRolloutError,
    PolicyCall,
    aclose_policy_clients,
    bind_policy,
    share_in_config_copies,
    translating_policy_errors,
)

from ._raw_arguments import raw_arguments_for
from .wire import ObservedClient

if TYPE_CHECKING:
    from strands.models.openai import OpenAIModel

DEFAULT_MODEL_ID = "osmosis-rollout"


def _share_tools_in_config_copies() -> None:
    """Let LocalBackend share Strands ``@tool`` objects between rollouts' config copies.

    They hold no per-rollout state (a function and its spec), and deep-copying them is most of
    the cost of copying a template's config for every rollout. The model itself is not shared:
    ``update_config`` mutates it, so each rollout keeps its own copy.
    """
    from strands.tools.decorator import DecoratedFunctionTool

    share_in_config_copies(DecoratedFunctionTool)


_share_tools_in_config_copies()


# ``NoActiveRolloutError`` is core's (osmosis_ai.errors); importable from here as before.
__all__ = ["DEFAULT_MODEL_ID", "NoActiveRolloutError", "OsmosisRolloutModel", "aclose_clients"]

# Closes the running loop's shared policy client (call at shutdown); the name predates core's.
aclose_clients = aclose_policy_clients


class CallRecorder(Protocol):
    """Receives one :class:`~osmosis_ai.rollout.policy.PolicyCall` per completed policy call (see :mod:`.sample`)."""

    def record_call(self, record: PolicyCall) -> None: ...


class OsmosisRolloutModel(Model):
    """The policy being trained, as a Strands model; usable only while a rollout is running.

    ``OsmosisRolloutModel(params={"temperature": 1.0, "max_tokens": 4096})`` takes the
    ``OpenAIModel`` configuration: ``model_id`` (default ``"osmosis-rollout"``; the policy server
    decides what actually serves it) and ``params`` (sent in every request body, e.g.
    ``temperature``, ``top_p``, ``max_tokens``, ``extra_body``). Also accepted:

    * ``stream`` (or ``params={"stream": False}``): streaming is the default; non-streaming sends
      one plain ``chat.completion`` request. Both work on every supported Strands release.
    * ``timeout`` (seconds per policy request; default: the ``openai`` client's 600 s) and
      ``max_retries`` (default 0: a failing policy fails the rollout as ``http_error`` or
      ``timeout`` instead of being retried blindly; Strands still backs off on HTTP 429).

    Build it anywhere (module level is fine) and share it between agents and rollouts: each call
    goes to the rollout active in the calling task. Called outside a rollout it raises a
    ``RuntimeError`` that says how to run it.
    """

    def __init__(self, **model_config: Any) -> None:
        params = model_config.get("params")
        if params is not None and not isinstance(params, dict):
            raise TypeError(
                f"OsmosisRolloutModel(params=...) must be a dict of request parameters such as "
                f'{{"temperature": 1.0}}, got {type(params).__name__}'
            )
        model_config["model_id"] = _model_id(model_config.get("model_id") or DEFAULT_MODEL_ID)
        self.config: dict[str, Any] = model_config
        self._recorder: CallRecorder | None = None

    def update_config(self, **model_config: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        if "model_id" in model_config:
            model_config["model_id"] = _model_id(model_config["model_id"])
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:  # pyright: ignore[reportIncompatibleMethodOverride]
        return self.config

    def bound_to(self, recorder: CallRecorder) -> OsmosisRolloutModel:
        """A copy that reports each completed call to ``recorder`` (one per agent).

        The copy shares this model's config dict, so ``update_config`` on either is seen by both.
        """
        bound = copy.copy(self)
        bound._recorder = recorder
        return bound

    def __repr__(self) -> str:
        return f"OsmosisRolloutModel(model_id={self.config.get('model_id')!r})"

    # -- calls ---------------------------------------------------------------------------------

    def _delegate(self, observer: CallObserver) -> tuple[OpenAIModel, str]:
        config = dict(self.config)
        timeout = config.pop("timeout", None)
        max_retries = config.pop("max_retries", 0)
        policy = bind_policy(timeout=timeout, max_retries=max_retries or 0)
        from strands.models.openai import OpenAIModel  # deferred: pulls in openai (~1 s)

        stream = config.pop("stream", None)
        params = dict(config.get("params") or {})
        if stream is not None:
            params["stream"] = bool(stream)
        config["params"] = params
        raw_arguments = raw_arguments_for(policy.context)
        client = ObservedClient(policy.client, observer, raw_arguments)
        return OpenAIModel(client=client, **config), policy.url

    async def stream(  # pyright: ignore[reportIncompatibleMethodOverride]
        self,
        messages: Any,
        tool_specs: Any = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        observer = CallObserver()
        delegate, url = self._delegate(observer)
        async for event in _translated(
            delegate.stream(messages, tool_specs, system_prompt, **kwargs), url
        ):
            yield event
        if self._recorder is not None:
            self._recorder.record_call(observer.record(str(self.config["model_id"])))

    async def structured_output(  # pyright: ignore[reportIncompatibleMethodOverride]
        self,
        output_model: Any,
        prompt: Any,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        delegate, url = self._delegate(CallObserver())
        async for event in _translated(
            delegate.structured_output(output_model, prompt, system_prompt=system_prompt, **kwargs),
            url,
        ):
            yield event


# 0.3 defined the public classes in the package module itself; report that path.
OsmosisRolloutModel.__module__ = "osmosis_ai.rollout.integrations.agents.strands"


def _model_id(model_id: Any) -> Any:
    """Strip LiteLLM's ``openai/`` provider prefix.

    The public SDK routed through LiteLLM, where ``"openai/<name>"`` means ``<name>`` over the
    OpenAI protocol; stripping it makes such configs send the same model name as before.
    """
    if isinstance(model_id, str) and model_id.startswith("openai/"):
        return model_id.removeprefix("openai/")
    return model_id


async def _translated(events: AsyncIterable[Any], url: str) -> AsyncGenerator[Any, None]:
    """Re-raise policy transport failures as PolicyHTTPError / PolicyTimeoutError."""
    with translating_policy_errors(url):
        async for event in events:
            yield event
