"""Platform state some workspace skills start from (docs/skills.md, "State a skill needs").

A skill that follows a training run or deploys its checkpoints cannot create that state with its
own blocks: on the real platform it comes from hours of GPU time. Each hook seeds the stand-in
platform with what a real user would already have, named as the skill's text names it.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from platform_harness import Platform

BASE_MODEL = {
    "id": "bm_1",
    "model_name": "Qwen/Qwen3.6-35B-A3B",
    "base_model": "Qwen/Qwen3.6-35B-A3B",
    "parameters": 35_000_000_000,
    "context_window": 65536,
    "created_at": "2026-11-01T00:00:00Z",
}
RUN = "multiply-grpo-1"


def _points(value: Callable[[int], float], steps: int) -> list[dict[str, Any]]:
    return [{"step": s, "value": round(value(s), 4)} for s in range(0, steps + 1, 2)]


def _lora(name: str, step: int, reward: float, status: str) -> dict[str, Any]:
    return {
        "id": f"lm_{name}",
        "model_name": name,
        "base_model": BASE_MODEL["model_name"],
        "training_run_name": RUN,
        "checkpoint_step": step,
        "reward": reward,
        "deployment_status": status,
        "created_at": "2026-12-05T10:00:00Z",
    }


def training_in_progress(workspace: Path, platform: Platform, env: dict[str, str]) -> None:
    """run-training: the user submitted ``multiply-grpo-1`` (submit-training) and it has been
    training for a while: 40 of 120 steps, rising rewards, two checkpoints, a log."""
    state = platform.state
    run = state.add_run("training", RUN, status="running")
    run.update(model_name=BASE_MODEL["model_name"], dataset_name="multiply-train",
               rollout="multiply-local-plain")  # fmt: skip
    state.training_metrics[run["id"]] = {
        "overview": {"latest_step": 40, "total_steps": 120, "duration_ms": 5_400_000},
        "metrics": [
            {"metric_key": "train/reward", "title": "Training reward",
             "data_points": _points(lambda s: 0.35 + 0.5 * (1 - math.exp(-s / 15)), 40)},
            {"metric_key": "val/reward", "title": "Validation reward",
             "data_points": _points(lambda s: 0.33 + 0.4 * (1 - math.exp(-s / 18)), 40)},
            {"metric_key": "actor/entropy", "title": "Entropy",
             "data_points": _points(lambda s: 0.9 * math.exp(-s / 60) + 0.2, 40)},
            {"metric_key": "response_length/mean", "title": "Response length",
             "data_points": _points(lambda s: 310 + 2.5 * s, 40)},
            {"metric_key": "response_length/clip_ratio", "title": "Truncation ratio",
             "data_points": _points(lambda s: 0.0 if s < 30 else 0.01, 40)},
        ],
    }  # fmt: skip
    state.checkpoints[run["id"]] = [
        {"id": "ck_1", "checkpoint_step": 20, "checkpoint_name": f"{RUN}-step-20",
         "status": "ready", "created_at": "2026-12-05T10:00:00Z"},
        {"id": "ck_2", "checkpoint_step": 40, "checkpoint_name": f"{RUN}-step-40",
         "status": "uploading", "created_at": "2026-12-05T11:00:00Z"},
    ]  # fmt: skip
    for line in ("rollout server healthy (8 workers)", "step 20: checkpoint saved",
                 "step 40: validation reward 0.63"):  # fmt: skip
        state.append_log(run, line)


def checkpoints_to_deploy(workspace: Path, platform: Platform, env: dict[str, str]) -> None:
    """deploy-models: a finished training run produced two LoRA checkpoints; the workspace has
    2 inference slots and one is taken by an older model."""
    state = platform.state
    state.base_models.append(BASE_MODEL)
    state.max_active_deployments = 2
    state.lora_models["calc-grpo-step-80"] = {
        **_lora("calc-grpo-step-80", 80, 0.71, "active"),
        "training_run_name": "calc-grpo",
    }
    state.lora_models[f"{RUN}-step-20"] = _lora(f"{RUN}-step-20", 20, 0.58, "inactive")
    state.lora_models[f"{RUN}-step-40"] = _lora(f"{RUN}-step-40", 40, 0.66, "inactive")


def benchmark_catalog(workspace: Path, platform: Platform, env: dict[str, str]) -> None:
    """submit-benchmarks: the workspace's benchmark catalog (the platform publishes it)."""
    leaderboard = [
        {"rank": 1, "tied": True, "agent": "codex (openai/gpt-5.2)",
         "pass_at_1": {"value": 0.62, "ci_low": 0.55, "ci_high": 0.69, "n": 267},
         "pass_at_k": [{"k": 1, "value": 0.62}, {"k": 3, "value": 0.74}]},
        {"rank": 1, "tied": True, "agent": "mini-swe-agent (openai/gpt-5-mini)",
         "pass_at_1": {"value": 0.58, "ci_low": 0.51, "ci_high": 0.65, "n": 267},
         "pass_at_k": [{"k": 1, "value": 0.58}]},
    ]  # fmt: skip
    for number, key in enumerate(("terminal-bench-2-1", "hle"), start=1):
        platform.state.benchmarks.append(
            {"id": f"bm_{number}", "key": key, "name": key.replace("-", " ").title(),
             "task_count": 89 * number, "run_count": 0, "last_run_status": None,
             "task_sets": [{"name": "parity", "task_count": 50, "recommended": True}]
             if key == "hle" else [],
             "leaderboard": leaderboard if number == 1 else []}
        )  # fmt: skip


def connected_repository(workspace: Path, platform: Platform, env: dict[str, str]) -> None:
    """evaluate-rollouts, submit-eval, submit-training: the workspace's git ``origin`` is the
    repository connected to the platform (a workspace the platform made is a clone of it; one
    made with ``osmosis init`` gets it from the user). Submits refuse a workspace without one;
    the stand-in never clones, only the URL is sent."""
    url = "git@example.com:me/workspace.git"
    subprocess.run(["git", "-C", str(workspace), "remote", "add", "origin", url], check=True)


HOOKS: dict[str, Callable[[Path, Platform, dict[str, str]], None]] = {
    "evaluate-rollouts": connected_repository,
    "submit-eval": connected_repository,
    "submit-training": connected_repository,
    "run-training": training_in_progress,
    "deploy-models": checkpoints_to_deploy,
    "submit-benchmarks": benchmark_catalog,
}
