"""The public contract of osmosis-ai 0.3 (reference §H 1-6) and the import surface."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import subprocess
import sys
from typing import Any

import pytest
from pydantic import ValidationError

from osmosis_ai.rollout import (
    AgentWorkflowConfig,
    AgentWorkflowOutput,
    ConcurrencyConfig,
    GraderContext,
    RolloutContext,
    RolloutSample,
    SampleSource,
    get_rollout_context,
)


def test_public_names_import() -> None:
    from osmosis_ai.rollout import AgentWorkflow, Grader, LocalBackend
    from osmosis_ai.rollout.agent_workflow import AgentWorkflow as AW
    from osmosis_ai.rollout.backend import ExecutionBackend
    from osmosis_ai.rollout.backend import LocalBackend as LB
    from osmosis_ai.rollout.backend.local import LocalBackend as LB2
    from osmosis_ai.rollout.context import AgentWorkflowContext  # noqa: F401
    from osmosis_ai.rollout.grader import Grader as G
    from osmosis_ai.rollout.types import ExecutionOutcome, RolloutResultResponse  # noqa: F401

    assert AW is AgentWorkflow
    assert G is Grader
    assert LB is LocalBackend is LB2
    assert issubclass(LocalBackend, ExecutionBackend)


def test_missing_integration_names_the_pip_command() -> None:
    from osmosis_ai.rollout.optional_imports import MissingExtraFinder

    leaf = "osmosis_ai.rollout.integrations.agents.strands"
    with pytest.raises(ModuleNotFoundError, match=r'pip install "osmosis-ai\[strands\]"'):
        MissingExtraFinder().find_spec(leaf)
    # A real import: in the core-only test venv the integration distribution is absent.
    try:
        installed = importlib.util.find_spec(leaf) is not None
    except ModuleNotFoundError:
        installed = False
    if installed:
        pytest.skip("osmosis-strands is installed in this environment")
    with pytest.raises(ModuleNotFoundError, match=r'pip install "osmosis-ai\[strands\]"'):
        importlib.import_module(leaf)


def _fresh_python(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    ).stdout.strip()


def test_import_rollout_does_not_import_pydantic() -> None:
    out = _fresh_python(
        "import sys, osmosis_ai.rollout; "
        "print(sorted(m for m in ('pydantic', 'fastapi', 'httpx', 'uvicorn') if m in sys.modules))"
    )
    assert out == "[]"


def test_testing_kit_without_fastapi_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['fastapi'] = None  # as if fastapi were not installed\n"
        "try:\n"
        "    import osmosis_ai.testing\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc)\n"
    )
    out = _fresh_python(code)
    assert 'pip install "osmosis-ai[server]"' in out
    assert "osmosis-core[server]" in out


# -- H1 RolloutSample reward rules -----------------------------------------------------------


def test_sample_reward_must_be_finite() -> None:
    with pytest.raises(ValidationError):
        RolloutSample(messages=[], reward=float("nan"))
    sample = RolloutSample(messages=[])
    with pytest.raises(ValidationError):
        sample.reward = float("inf")
    sample.reward = 1  # type: ignore[assignment]
    assert sample.reward == 1.0
    assert isinstance(sample.reward, float)
    assert RolloutSample(messages=[], reward=None).reward is None


# -- H2 GraderContext ---------------------------------------------------------------------------


def test_set_reward_without_sample_raises() -> None:
    with pytest.raises(ValueError, match="no sample"):
        GraderContext(label="x", sample=None).set_reward(1.0)


def test_set_reward_validates() -> None:
    ctx = GraderContext(label="x", sample=RolloutSample(messages=[]))
    ctx.set_reward(0.25)
    assert ctx.sample is not None
    assert ctx.sample.reward == 0.25
    with pytest.raises(ValidationError):
        ctx.set_reward(float("nan"))


# -- H3 AgentWorkflowOutput ---------------------------------------------------------------------


def test_output_forbids_extra_fields_and_non_finite_metrics() -> None:
    with pytest.raises(ValidationError):
        AgentWorkflowOutput(messages=[], foo=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        AgentWorkflowOutput(metrics={"m": float("nan")})
    assert AgentWorkflowOutput().messages is None


# -- H5 configs -----------------------------------------------------------------------------------


def test_config_rules() -> None:
    with pytest.raises(ValidationError):
        AgentWorkflowConfig()  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        ConcurrencyConfig(max_concurrent=0)
    config = AgentWorkflowConfig.model_validate(
        {"name": "w", "model": object(), "temperature": 0.7}
    )
    assert config.temperature == 0.7  # type: ignore[attr-defined]
    assert config.concurrency.max_concurrent is None


# -- H6 RolloutContext ------------------------------------------------------------------------------


class _Source(SampleSource):
    async def get_sample(self) -> RolloutSample:
        return RolloutSample(messages=[{"role": "user", "content": "x"}])


def test_second_sample_source_is_rejected() -> None:
    ctx = RolloutContext()
    ctx.set_sample_source(_Source())
    with pytest.raises(ValueError, match="already has a sample source"):
        ctx.set_sample_source(_Source())


def test_env_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OSMOSIS_ROLLOUT_ID", "r9")
    monkeypatch.setenv("OSMOSIS_CHAT_COMPLETIONS_URL", "http://policy/v1/rollouts/r9")
    monkeypatch.setenv("OSMOSIS_API_KEY", "k")
    ctx = RolloutContext()
    assert ctx.rollout_id == "r9"
    assert ctx.chat_completions_url == "http://policy/v1/rollouts/r9"
    assert ctx.api_key == "k"
    explicit = RolloutContext(rollout_id="mine", api_key="own")
    assert explicit.rollout_id == "mine"
    assert explicit.api_key == "own"


def test_context_nesting_restores_the_outer_context() -> None:
    outer = RolloutContext(rollout_id="outer")
    inner = RolloutContext(rollout_id="inner")
    assert get_rollout_context() is None
    with outer:
        with inner:
            assert get_rollout_context() is inner
        assert get_rollout_context() is outer
        with outer:  # re-entering the same context is also safe
            assert get_rollout_context() is outer
        assert get_rollout_context() is outer
    assert get_rollout_context() is None


async def test_concurrent_tasks_see_their_own_context() -> None:
    seen: dict[str, Any] = {}

    async def rollout(rollout_id: str) -> None:
        with RolloutContext(rollout_id=rollout_id):
            await asyncio.sleep(0)
            ctx = get_rollout_context()
            assert ctx is not None
            seen[rollout_id] = ctx.rollout_id

    await asyncio.gather(*(rollout(f"r{i}") for i in range(20)))
    assert seen == {f"r{i}": f"r{i}" for i in range(20)}


async def test_get_sample_without_source_is_none() -> None:
    assert await RolloutContext().get_sample() is None
    ctx = RolloutContext()
    ctx.set_sample_source(_Source())
    sample = await ctx.get_sample()
    assert sample is not None
    assert sample.messages[0]["content"] == "x"
