"""Per-rollout config copies: deep copies, except types registered as shared by design."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from osmosis_ai.rollout import (
    AgentWorkflow,
    AgentWorkflowConfig,
    AgentWorkflowContext,
    ExecutionRequest,
    LocalBackend,
    RolloutStatus,
)
from osmosis_ai.rollout.backend.local import share_in_config_copies
from osmosis_ai.rollout.backend.local._loading import ConfigCopier


class StatelessTool:
    """Stands for a framework tool object: registered as shared in these tests."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.spec = {"name": name, "parameters": {"a": "int"}}


class LateTool:
    """Registered only after the copier was built (not a subclass of a registered type)."""

    def __init__(self, name: str) -> None:
        self.name = name


class Stateful:
    """A user object of similar shape that is NOT registered: it keeps deep-copy isolation."""

    def __init__(self) -> None:
        self.calls: list[int] = []


def seen_configs() -> tuple[type[AgentWorkflow[Any]], list[Any]]:
    configs: list[Any] = []

    class Sees(AgentWorkflow[AgentWorkflowConfig]):
        async def run(self, ctx: AgentWorkflowContext[AgentWorkflowConfig]) -> Any:
            configs.append(ctx.config)
            return [{"role": "assistant", "content": "ok"}]

    return Sees, configs


async def test_registered_types_are_shared_and_everything_else_is_copied() -> None:
    share_in_config_copies(StatelessTool)
    tool = StatelessTool("multiply")
    user_object = Stateful()
    config = AgentWorkflowConfig.model_validate(
        {
            "name": "c",
            "tools": [tool],
            "by_name": {"multiply": tool},
            "pair": (tool, [1]),
            "state": user_object,
        }
    )
    workflow, configs = seen_configs()
    backend = LocalBackend(workflow=workflow, workflow_config=config)
    for rollout_id in ("a", "b"):
        outcome = await backend.execute(ExecutionRequest(id=rollout_id, prompt=[]))
        assert outcome.result.status == RolloutStatus.SUCCESS
    first, second = configs
    for seen in (first, second):
        assert seen is not config
        assert seen.tools is not config.tools  # pyright: ignore[reportAttributeAccessIssue]
        assert seen.tools[0] is tool  # the registered object is shared
        assert seen.by_name["multiply"] is tool
        assert seen.pair[0] is tool
        assert seen.pair[1] is not config.pair[1]  # pyright: ignore[reportAttributeAccessIssue]
        assert seen.state is not user_object  # unregistered: deep-copied as before
        assert seen.concurrency is not config.concurrency
    first.state.calls.append(1)
    first.tools.append("extra")
    assert second.state.calls == []
    assert config.tools == [tool]  # pyright: ignore[reportAttributeAccessIssue]


def test_types_registered_after_the_copier_was_built_take_effect() -> None:
    tool = LateTool("late")
    copier = ConfigCopier(AgentWorkflowConfig.model_validate({"name": "c", "tools": [tool]}))
    assert copier.copy().tools[0] is not tool
    share_in_config_copies(LateTool)
    assert copier.copy().tools[0] is tool


def test_registered_types_are_shared_when_other_fields_cannot_be_copied(
    caplog: pytest.LogCaptureFixture,
) -> None:
    share_in_config_copies(StatelessTool)
    tool = StatelessTool("t")
    lock = threading.Lock()
    config = AgentWorkflowConfig.model_validate(
        {"name": "c", "lock": lock, "tools": [tool], "items": [1]}
    )
    copier = ConfigCopier(config)
    clone = copier.copy()
    assert clone.lock is lock
    assert clone.tools[0] is tool
    assert clone.tools is not config.tools  # pyright: ignore[reportAttributeAccessIssue]
    assert clone.items is not config.items  # pyright: ignore[reportAttributeAccessIssue]
    assert sum("cannot be deep-copied" in r.getMessage() for r in caplog.records) == 1


def test_plain_data_configs_are_copied_like_deepcopy() -> None:
    """Plain data (atoms, containers, nested models) takes a faster path with deepcopy's
    result: every mutable part is the rollout's own, equal to the original."""
    shared_list = [1, 2]
    config = AgentWorkflowConfig.model_validate(
        {
            "name": "c",
            "items": shared_list,
            "alias": shared_list,
            "nested": {"k": [RolloutStatus.SUCCESS, 1.5, None], "t": (1, "a")},
            "tags": {"x"},
        }
    )
    config.concurrency.max_concurrent = 3
    copier = ConfigCopier(config)
    clone = copier.copy()
    assert clone == copy.deepcopy(config)
    assert clone.model_fields_set == config.model_fields_set
    assert clone.concurrency is not config.concurrency
    assert clone.items is not shared_list
    assert clone.alias is clone.items  # an object met twice is copied once, as deepcopy does
    assert clone.nested["k"] is not config.nested["k"]  # pyright: ignore[reportAttributeAccessIssue]
    assert clone.nested["t"] is config.nested["t"]  # pyright: ignore[reportAttributeAccessIssue]  # kept, as deepcopy keeps it
    assert clone.tags is not config.tags  # pyright: ignore[reportAttributeAccessIssue]
    clone.concurrency.max_concurrent = 9
    clone.items.append(3)
    clone.nested["k"].append("x")
    assert config.concurrency.max_concurrent == 3
    assert shared_list == [1, 2]
    assert config.nested["k"] == [RolloutStatus.SUCCESS, 1.5, None]  # pyright: ignore[reportAttributeAccessIssue]


def test_a_model_with_its_own_deepcopy_keeps_it() -> None:
    class Counted(BaseModel):
        copies: int = 0

        def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Counted:
            return Counted(copies=self.copies + 1)

    config = AgentWorkflowConfig.model_validate({"name": "c", "counted": Counted()})
    clone = ConfigCopier(config).copy()
    assert clone.counted.copies == 1


def test_registration_rejects_non_classes() -> None:
    with pytest.raises(TypeError, match="takes classes"):
        share_in_config_copies(StatelessTool("not a class"))  # pyright: ignore[reportArgumentType]
