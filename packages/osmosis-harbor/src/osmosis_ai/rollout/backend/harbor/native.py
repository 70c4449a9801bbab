"""Harbor's own agents, pointed at the rollout's policy endpoint.

Only agents whose model endpoint can be injected per rollout are supported:

- ``terminus-2``: runs in the host process through LiteLLM; gets ``api_base`` and
  ``llm_kwargs.api_key`` as constructor kwargs (which Harbor writes verbatim to the trial config,
  so the backend scrubs the key from the trial dir, see :mod:`.hygiene`);
- ``mini-swe-agent``: runs in the sandbox; gets ``OPENAI_BASE_URL``/``OPENAI_API_BASE`` and
  ``OPENAI_API_KEY`` through ``AgentConfig.env`` (Harbor redacts key-like values);
- ``oracle``: runs the task's reference solution and calls no model. Useful to validate tasks
  and verifiers; its samples must never be used for training;
- ``nop``: does nothing (a verifier sanity check: it should score 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from harbor.models.trial.config import AgentConfig

NATIVE_AGENTS: Final = ("oracle", "nop", "terminus-2", "mini-swe-agent")
_KEY_PLACEHOLDER: Final = "osmosis-no-key"


def native_agent_config(
    name: str,
    *,
    model_name: str,
    chat_completions_url: str,
    api_key: str | None,
    extra_kwargs: dict[str, Any] | None = None,
    extra_allowed_hosts: list[str] | None = None,
) -> AgentConfig:
    """The ``AgentConfig`` for one rollout of a native agent."""
    from harbor.models.trial.config import AgentConfig

    kwargs: dict[str, Any] = dict(extra_kwargs or {})
    env: dict[str, str] = {}
    key = api_key or _KEY_PLACEHOLDER
    if name == "terminus-2":
        kwargs["api_base"] = chat_completions_url
        kwargs["llm_kwargs"] = {**(kwargs.get("llm_kwargs") or {}), "api_key": key}
    elif name == "mini-swe-agent":
        env = {
            "OPENAI_BASE_URL": chat_completions_url,
            "OPENAI_API_BASE": chat_completions_url,
            "OPENAI_API_KEY": key,
        }
    elif name not in ("oracle", "nop"):
        raise ValueError(
            f"native agent {name!r} is not supported; choose one of {', '.join(NATIVE_AGENTS)} "
            "or pass an AgentWorkflow class"
        )
    model = model_name if name in ("terminus-2", "mini-swe-agent") else None
    return AgentConfig(
        name=name,
        model_name=model,
        kwargs=kwargs,
        env=env,
        extra_allowed_hosts=list(extra_allowed_hosts or []),
    )
