"""``model list | info | deploy | undeploy`` against the stand-in platform."""

from __future__ import annotations

from pathlib import Path

import pytest
from platform_harness import Cli, Platform  # pyright: ignore[reportMissingImports]
from stand_in_state import Fault  # pyright: ignore[reportMissingImports]

BASE = {"id": "bm_1", "model_name": "Qwen/Qwen3-8B", "base_model": "Qwen/Qwen3-8B",
        "parameters": 8_000_000_000, "context_window": 32768, "created_at": "2026-11-01T00:00:00Z"}  # fmt: skip


def _lora(name: str, status: str = "inactive") -> dict:
    return {
        "id": f"lm_{name}",
        "model_name": name,
        "base_model": "Qwen/Qwen3-8B",
        "training_run_name": "calc-train",
        "checkpoint_step": 40,
        "reward": 0.82,
        "deployment_status": status,
        "created_at": "2026-11-02T00:00:00Z",
    }


@pytest.fixture
def models(platform: Platform, cli: Cli) -> Platform:
    cli.env["OSMOSIS_TOKEN"] = platform.token
    platform.state.base_models.append(BASE)
    for name, status in (("calc-step-40", "active"), ("calc-step-80", "inactive")):
        platform.state.lora_models[name] = _lora(name, status)
    return platform


def test_list_shows_both_kinds_and_the_deployment_quota(
    cli: Cli, models: Platform, tmp_path: Path
) -> None:
    listed = cli("--json", "model", "list", cwd=tmp_path).envelope()
    assert [(m["model_name"], m["type"]) for m in listed["items"]] == [
        ("Qwen/Qwen3-8B", "base"),
        ("calc-step-40", "lora"),
        ("calc-step-80", "lora"),
    ]
    assert (listed["active_deployments"], listed["max_active_deployments"]) == (1, 5)
    lora = cli("--json", "model", "list", "--type", "lora", "--limit", "1", cwd=tmp_path)
    envelope = lora.envelope()
    assert [m["model_name"] for m in envelope["items"]] == ["calc-step-40"]
    assert envelope["next_offsets"] == {"lora": 1}
    every = cli("--json", "model", "list", "--type", "lora", "--limit", "1", "--all", cwd=tmp_path)
    assert len(every.envelope()["items"]) == 2
    plain = cli("--plain", "model", "list", cwd=tmp_path)
    assert "1 of 5 inference deployments used" in plain.stderr
    bad = cli("--json", "model", "list", "--type", "adapter", cwd=tmp_path)
    assert bad.error()["error"]["code"] == "VALIDATION"


def test_info_finds_a_lora_model_then_a_base_model_by_its_path(
    cli: Cli, models: Platform, tmp_path: Path
) -> None:
    lora = cli("--json", "model", "info", "calc-step-40", cwd=tmp_path).envelope()["data"]
    assert (lora["type"], lora["training_run_name"], lora["deployment_status"]) == (
        "lora",
        "calc-train",
        "active",
    )
    base = cli("--json", "model", "info", "Qwen/Qwen3-8B", cwd=tmp_path).envelope()["data"]
    assert (base["type"], base["context_window"]) == ("base", 32768)
    # a slash means a base model: the LoRA endpoint is never asked
    assert not [r for r in models.state.requests if r.path == "/api/cli/models/Qwen/Qwen3-8B"]
    missing = cli("--json", "model", "info", "nope", cwd=tmp_path)
    assert missing.code == 1
    assert missing.error()["error"]["code"] == "NOT_FOUND"
    assert "osmosis model list" in missing.error()["error"]["message"]


def test_deploy_and_undeploy_within_the_quota(cli: Cli, models: Platform, tmp_path: Path) -> None:
    models.state.max_active_deployments = 1
    full = cli("--json", "model", "deploy", "calc-step-80", cwd=tmp_path)
    assert full.code == 1
    error = full.error()["error"]
    assert error["code"] == "CONFLICT"
    assert "1 of 1 inference deployments used" in error["message"]
    assert "osmosis model undeploy" in error["message"]

    freed = cli("--json", "model", "undeploy", "calc-step-40", cwd=tmp_path).envelope()
    assert (freed["operation"], freed["resource"]["status"]) == ("model.undeploy", "inactive")
    done = cli("--json", "model", "deploy", "calc-step-80", cwd=tmp_path).envelope()
    assert (done["operation"], done["resource"]["status"]) == ("model.deploy", "active")
    assert models.state.lora_models["calc-step-80"]["deployment_status"] == "active"
    base = cli("--json", "model", "deploy", "Qwen/Qwen3-8B", cwd=tmp_path)
    assert base.error()["error"]["code"] == "VALIDATION"


def test_a_workspace_without_inference_shows_no_deployment_fields(
    cli: Cli, models: Platform, tmp_path: Path
) -> None:
    models.state.max_active_deployments = None
    listed = cli("--json", "model", "list", "--type", "lora", cwd=tmp_path).envelope()
    assert "active_deployments" not in listed
    assert all("deployment_status" not in m for m in listed["items"])
    refused = cli("--json", "model", "deploy", "calc-step-80", cwd=tmp_path)
    error = refused.error()["error"]
    # a permission the workspace lacks, not a login problem: signing in again does not help
    assert (refused.code, error["code"]) == (1, "PERMISSION_DENIED")
    assert error["details"]["platform_code"] == "inference_unavailable"
    assert "lacks access" in error["message"]
    assert "auth login" not in error["message"]


@pytest.mark.parametrize(
    ("status", "code"),
    [(401, "AUTH_REQUIRED"), (403, "PERMISSION_DENIED"), (500, "PLATFORM_ERROR")],
)
def test_platform_errors_on_model_commands(
    cli: Cli, models: Platform, tmp_path: Path, status: int, code: str
) -> None:
    models.state.faults.append(Fault("GET", "/api/cli/models", status, times=-1))
    result = cli("--json", "model", "list", cwd=tmp_path)
    assert result.code == 1
    assert result.error()["error"]["code"] == code
