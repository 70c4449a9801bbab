"""The stand-in platform's model endpoints: base models, LoRA models and their inference
deployments with a workspace quota (``docs/platform-api.md``, "Models")."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from stand_in_files import error, page
from stand_in_state import PlatformState, now


def add_model_routes(app: FastAPI, state: PlatformState) -> None:
    def active() -> int:
        return sum(1 for m in state.lora_models.values() if m.get("deployment_status") == "active")

    def shown(model: dict[str, Any]) -> dict[str, Any]:
        if state.max_active_deployments is None:  # no inference: no deployment fields at all
            return {k: v for k, v in model.items() if not k.startswith(("deploy", "deployed"))}
        return model

    @app.get("/api/cli/models/base")
    async def list_base(limit: int = 50, offset: int = 0) -> Any:
        return page(state.base_models, limit, offset)

    @app.get("/api/cli/models/lora")
    async def list_lora(limit: int = 50, offset: int = 0) -> Any:
        body = page([shown(m) for m in state.lora_models.values()], limit, offset)
        if state.max_active_deployments is not None:
            body["active_deployments"] = active()
            body["max_active_deployments"] = state.max_active_deployments
        return body

    @app.get("/api/cli/models/base/{name:path}")
    async def get_base(name: str) -> Any:
        found = next((m for m in state.base_models if name in (m["model_name"], m["id"])), None)
        if found is None:
            return error(404, "model_not_found", f"no base model {name!r}")
        return found

    @app.get("/api/cli/models/{name}")
    async def get_lora(name: str) -> Any:
        if name not in state.lora_models:
            return error(404, "model_not_found", f"no LoRA model {name!r}")
        return shown(state.lora_models[name])

    @app.post("/api/cli/models/{name}/{verb}")
    async def set_deployment(name: str, verb: str, request: Request) -> Any:
        model = state.lora_models.get(name)
        if model is None or verb not in ("deploy", "undeploy"):
            return error(404, "model_not_found", f"no LoRA model {name!r}")
        if state.max_active_deployments is None:
            return error(
                403, "inference_unavailable", "inference is not enabled for this workspace"
            )
        if verb == "deploy" and model.get("deployment_status") != "active":
            if active() >= state.max_active_deployments:
                return error(
                    409,
                    "deployment_quota_exceeded",
                    f"{active()} of {state.max_active_deployments} inference deployments used.",
                )
            model.update(
                deployment_status="active",
                deployed_at=now(),
                deployed_by=request.state.user["email"],
            )
        elif verb == "undeploy":
            model.update(deployment_status="inactive")
        return {"id": model["id"], "model_name": name, "status": model["deployment_status"]}
