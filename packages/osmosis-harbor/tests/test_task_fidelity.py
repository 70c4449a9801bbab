"""Tasks written in Harbor's published layout (task.toml, instruction.md, environment/Dockerfile,
solution/solve.sh, tests/test.sh), run as they are on the local sandbox: what the Dockerfile
asks is honoured (WORKDIR, ENV, COPY) or the trial fails naming the step it cannot honour; a
verifier writing several rewards is reduced by the backend's reward rule."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from harbor.trial.queue import TrialQueue

from osmosis_ai.rollout.backend.harbor import HarborBackend, local_environment_config
from osmosis_ai.rollout.backend.harbor._dockerfile import needs_network, plan_image
from osmosis_ai.rollout.context import RolloutContext
from osmosis_ai.rollout.types.enums import RolloutErrorCategory, RolloutStatus
from osmosis_ai.rollout.types.execution import ExecutionOutcome, ExecutionRequest

TASKS = Path(__file__).parent / "fixtures" / "harbor_tasks"


def _backend(queue: TrialQueue, agent: str, **kwargs: object) -> HarborBackend:
    return HarborBackend(
        orchestrator=queue,
        tasks_dir=TASKS,
        task_mode="dataset",
        agent=agent,
        environment_config=local_environment_config(),
        **kwargs,  # type: ignore[arg-type]
    )


async def _run(backend: HarborBackend, rollout_id: str, task: str) -> ExecutionOutcome:
    with RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id=rollout_id):
        return await backend.execute(
            ExecutionRequest(id=rollout_id, prompt=[], metadata={"harbor_task_id": task})
        )


async def test_oracle_solves_faithful_tasks_and_an_unsupported_one_says_why(
    queue: TrialQueue,
) -> None:
    oracle = _backend(queue, "oracle")
    hello, fib, network = await asyncio.gather(
        _run(oracle, "o-hello", "hello-workdir"),
        _run(oracle, "o-fib", "fib-multi-reward"),
        _run(oracle, "o-jq", "jq-needs-network"),
    )
    # WORKDIR /app + COPY + ENV from the Dockerfile (task.toml names no workdir).
    assert hello.result.status == RolloutStatus.SUCCESS, hello.result.err_message
    assert hello.wire_reward == 1.0
    # {"correctness": 1, "performance": 1}, no "reward" key: the mean, every key a metric.
    assert fib.result.status == RolloutStatus.SUCCESS, fib.result.err_message
    assert fib.wire_reward == 1.0
    assert fib.result.sample is not None
    assert fib.result.sample.metrics == {"reward/correctness": 1, "reward/performance": 1}
    # The image installs jq from the network: the trial fails before the agent, naming it.
    assert network.result.status == RolloutStatus.FAILURE
    assert network.result.err_category == RolloutErrorCategory.INTERNAL_ERROR
    message = network.result.err_message or ""
    assert "UnsupportedEnvironmentError" in message
    assert "line 3: RUN apt-get update && apt-get install" in message
    assert "RUN needs the network: apt-get" in message
    assert network.wire_reward is None
    await oracle.shutdown()


async def test_nop_scores_zero_and_the_reward_rule_is_configurable(queue: TrialQueue) -> None:
    nop = _backend(queue, "nop")
    weighted = _backend(queue, "oracle", reward_weights={"correctness": 0.25, "performance": 0.5})
    hello, fib, fib_weighted = await asyncio.gather(
        _run(nop, "n-hello", "hello-workdir"),
        _run(nop, "n-fib", "fib-multi-reward"),
        _run(weighted, "w-fib", "fib-multi-reward"),
    )
    assert (hello.result.status, hello.wire_reward) == (RolloutStatus.SUCCESS, 0.0)
    assert (fib.result.status, fib.wire_reward) == (RolloutStatus.SUCCESS, 0.0)
    assert fib_weighted.wire_reward == 0.75
    await nop.shutdown()
    await weighted.shutdown()


def test_the_dockerfile_plan(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print(1)\n")
    (tmp_path / "Dockerfile").write_text(
        "FROM golang:1.22 AS build\n"
        "RUN go build ./...\n"
        "FROM python:3.12-slim\n"
        "ARG APP=/srv/app\n"
        "ENV PATH=/opt/tools/bin:$PATH MODE=test\n"
        "WORKDIR $APP\n"
        "COPY --chown=1000:1000 src/ ./src/\n"
        "RUN mkdir -p data && echo ready > data/state\n"
        "COPY --from=build /out/tool /usr/local/bin/tool\n"
        'ENTRYPOINT ["/usr/local/bin/start-db"]\n'
        'CMD ["sleep", "infinity"]\n'
    )
    plan = plan_image(tmp_path, {"PATH": "/usr/bin"})
    assert plan.workdir == "/srv/app"
    assert plan.env == {"PATH": "/opt/tools/bin:/usr/bin", "MODE": "test"}
    assert [(s.kind, s.target or s.command) for s in plan.steps] == [
        ("workdir", "/srv/app"),
        ("copy", "/srv/app/src/"),
        ("run", "mkdir -p data && echo ready > data/state"),
    ]
    # Only the last build stage counts; what it cannot honour is named line by line.
    assert plan.unsupported == [
        "line 9: COPY --from=build /out/tool /usr/local/bin/tool "
        "(COPY --from needs another build stage)",
        'line 10: ENTRYPOINT ["/usr/local/bin/start-db"] '
        "(ENTRYPOINT starts a service at container start)",
    ]
    with pytest.raises(Exception, match=r"line 10: ENTRYPOINT"):
        plan.check()


def test_only_generic_base_images_are_stood_in_for(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(
        "FROM docker.io/library/python:3.12-slim AS base\n"
        "WORKDIR /srv\n"
        "FROM base\n"  # continues the earlier stage
        "ENV MODE=x\n"
    )
    chained = plan_image(tmp_path)
    assert (chained.workdir, chained.env, chained.unsupported) == ("/srv", {"MODE": "x"}, [])
    (tmp_path / "Dockerfile").write_text("FROM swebench/sweb.eval.x86_64.django:v1\n")
    assert plan_image(tmp_path).unsupported == [
        "line 1: FROM swebench/sweb.eval.x86_64.django:v1 (the host's userland cannot stand "
        "in for the base image swebench/sweb.eval.x86_64.django:v1)"
    ]
    (tmp_path / "Dockerfile").unlink()
    assert plan_image(tmp_path, docker_image="ubuntu:24.04").unsupported == []
    assert plan_image(tmp_path, docker_image="ghcr.io/acme/task@sha256:00").unsupported == [
        "[environment] docker_image (the host's userland cannot stand in for the base image "
        "ghcr.io/acme/task@sha256:00)"
    ]


@pytest.mark.parametrize(
    ("command", "tool"),
    [
        ("apt-get update && apt-get install -y jq", "apt-get"),
        ("DEBIAN_FRONTEND=noninteractive apt install -y git", "apt"),
        ("python3 -m pip install pytest==8.4.1", "python -m pip"),
        ("cd /src && git clone https://example.com/r.git", "git clone"),
        ("curl -LsSf https://astral.sh/uv/install.sh | sh", "curl"),
        ("/usr/local/bin/uv pip install --system numpy", "uv"),
        ("mkdir -p /app && git init /app && chmod +x /app", None),
    ],
)
def test_run_steps_that_need_the_network(command: str, tool: str | None) -> None:
    assert needs_network(command) == tool


async def test_a_compose_task_with_a_dockerfile_is_refused_not_run(
    queue: TrialQueue, tmp_path: Path, make_task: Any
) -> None:
    """Issue 38 item 4: docker-compose.yaml next to a Dockerfile with FROM. The reference
    solution would score 1.0 on the host userland, but without the compose services the task
    is not the task: the trial must fail naming the compose file, not run."""
    tasks = tmp_path / "tasks"
    task = make_task(tasks / "with-compose")
    (task / "environment" / "docker-compose.yaml").write_text(
        "services:\n  main:\n    build: .\n  db:\n    image: postgres:16\n"
    )
    oracle = HarborBackend(
        orchestrator=queue,
        tasks_dir=tasks,
        task_mode="dataset",
        agent="oracle",
        environment_config=local_environment_config(),
    )
    try:
        outcome = await _run(oracle, "o-compose", "with-compose")
    finally:
        await oracle.shutdown()
    assert outcome.result.status == RolloutStatus.FAILURE
    message = outcome.result.err_message or ""
    assert "UnsupportedEnvironmentError" in message
    assert "environment/docker-compose.yaml (multi-container services" in message
    assert outcome.wire_reward is None


def test_the_compose_refusal_survives_every_build_stage(tmp_path: Path) -> None:
    environment = tmp_path / "environment"
    environment.mkdir()
    (environment / "docker-compose.yml").write_text("services: {}\n")
    (environment / "Dockerfile").write_text(
        "FROM python:3.12-slim AS build\nRUN true\nFROM build\nWORKDIR /app\n"
    )
    assert plan_image(environment).unsupported == [
        "environment/docker-compose.yml (multi-container services need a container runtime)"
    ]


def _multi_step_task(root: Path, *, second_solution: str, strategy: str | None = None) -> Path:
    """Harbor's multi-step layout: ``[[steps]]`` in task.toml; each step has its own
    instruction, solution and verifier under ``steps/<name>/``; no top-level instruction.md."""
    (root / "environment").mkdir(parents=True)
    (root / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\nWORKDIR /app\n")
    toml = 'schema_version = "1.4"\n'
    if strategy is not None:
        toml += f'multi_step_reward_strategy = "{strategy}"\n'
    toml += '\n[environment]\nworkdir = "/app"\n\n[agent]\ntimeout_sec = 60\n\n'
    toml += "[verifier]\ntimeout_sec = 60\n\n"
    toml += '[[steps]]\nname = "write"\n\n[[steps]]\nname = "extend"\n'
    (root / "task.toml").write_text(toml)
    check = "if {cond}; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi"
    steps = {
        "write": ("Write one to /app/n.txt.", "echo one > /app/n.txt", "grep -qx one /app/n.txt"),
        "extend": (
            "Append two to /app/n.txt.",
            second_solution,
            "[ \"$(cat /app/n.txt)\" = \"$(printf 'one\\ntwo')\" ]",
        ),
    }  # fmt: skip
    for name, (instruction, solve, cond) in steps.items():
        step = root / "steps" / name
        (step / "solution").mkdir(parents=True)
        (step / "tests").mkdir()
        (step / "instruction.md").write_text(instruction + "\n")
        for path, body in (
            (step / "solution" / "solve.sh", solve),
            (step / "tests" / "test.sh", check.format(cond=cond)),
        ):
            path.write_text(f"#!/bin/bash\n{body}\n")
            path.chmod(0o755)
    return root


async def test_multi_step_tasks_run_each_step_and_combine_rewards(
    queue: TrialQueue, tmp_path: Path
) -> None:
    """Issue 38 item 8: ``[[steps]]`` tasks run in dataset mode, every step's instruction, agent
    run and verifier, with the rewards combined as Harbor does (mean by default, or final)."""
    tasks = tmp_path / "tasks"
    _multi_step_task(tasks / "both-right", second_solution="echo two >> /app/n.txt")
    _multi_step_task(tasks / "second-wrong", second_solution="echo three >> /app/n.txt")
    _multi_step_task(tasks / "second-wrong-final", second_solution="true", strategy="final")
    oracle = HarborBackend(
        orchestrator=queue,
        tasks_dir=tasks,
        task_mode="dataset",
        agent="oracle",
        environment_config=local_environment_config(),
    )
    try:
        right, wrong, final = await asyncio.gather(
            _run(oracle, "ms-right", "both-right"),
            _run(oracle, "ms-wrong", "second-wrong"),
            _run(oracle, "ms-final", "second-wrong-final"),
        )
    finally:
        await oracle.shutdown()
    assert right.result.status == RolloutStatus.SUCCESS, right.result.err_message
    assert right.wire_reward == 1.0
    assert wrong.result.status == RolloutStatus.SUCCESS, wrong.result.err_message
    assert wrong.wire_reward == 0.5  # the mean of the steps' 1 and 0
    assert final.result.status == RolloutStatus.SUCCESS, final.result.err_message
    assert final.wire_reward == 0.0  # the final step's


async def test_template_mode_refuses_a_multi_step_task(queue: TrialQueue, tmp_path: Path) -> None:
    task = _multi_step_task(tmp_path / "steps-template", second_solution="true")
    backend = HarborBackend(
        orchestrator=queue,
        tasks_dir=task,
        agent="oracle",
        environment_config=local_environment_config(),
    )
    try:
        with RolloutContext(chat_completions_url="http://127.0.0.1:9/v1", rollout_id="t-steps"):
            outcome = await backend.execute(
                ExecutionRequest(id="t-steps", prompt=[{"role": "user", "content": "hi"}])
            )
    finally:
        await backend.shutdown()
    assert outcome.result.status == RolloutStatus.FAILURE
    assert "task_mode='dataset'" in (outcome.result.err_message or "")
