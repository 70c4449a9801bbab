"""``osmosis model list | info | deploy | undeploy``: base models and the LoRA models training
runs produced, and LoRA inference deployments (``docs/platform-api.md``, "Models").

A LoRA model's name never holds a ``/``; a base model is named by its Hugging Face path
(``Qwen/Qwen3-8B``), so ``model info NAME`` asks for a LoRA model first unless the name has a
slash, then for a base model. Deployments count against a workspace quota ("2 of 5 inference
deployments used"); a deploy over the quota says which command frees a slot.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from osmosis_cli.errors import CLIError, CLIErrorCode
from osmosis_cli.output import Column, Output
from osmosis_cli.platform.client import PlatformClient
from osmosis_cli.platform.listing import MAX_PAGES, fetch_page

ENDPOINT = "/api/cli/models"
TYPES = ("all", "base", "lora")
COLUMNS = [
    Column("model_name", "Name"),
    Column("type", "Type"),
    Column("base_model", "Base model"),
    Column("training_run_name", "Training run"),
    Column("checkpoint_step", "Step"),
    Column("reward", "Reward"),
    Column("deployment_status", "Deployment"),
    Column("created_at", "Created"),
]


def _pages(
    client: PlatformClient, path: str, *, limit: int, offset: int, all_pages: bool
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    page = fetch_page(client, path, limit=limit, offset=offset, params={})
    items = [i for i in page["items"] if isinstance(i, dict)]
    first = page
    pages = 1
    while all_pages and page.get("has_more") and isinstance(page.get("next_offset"), int):
        if pages >= MAX_PAGES:
            break
        page = fetch_page(client, path, limit=limit, offset=page["next_offset"], params={})
        items.extend(i for i in page["items"] if isinstance(i, dict))
        pages += 1
    more = page.get("next_offset") if page.get("has_more") else None
    return items, {**first, "next_offset": more}


def quota_text(page: Mapping[str, Any]) -> str | None:
    """``"2 of 5 inference deployments used"``, or ``None`` when the platform gives no quota
    (inference is not available to the workspace)."""
    used, most = page.get("active_deployments"), page.get("max_active_deployments")
    if isinstance(used, int) and isinstance(most, int) and most > 0:
        return f"{used} of {most} inference deployments used"
    return None


def list_models(output: Output, *, type_: str, limit: int, offset: int, all_pages: bool) -> None:
    if type_ not in TYPES:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"--type must be one of {', '.join(TYPES)} (got {type_!r}).",
            details={"flags": ["--type"]},
        )
    client = PlatformClient.from_login()
    items: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    more: dict[str, int] = {}
    for kind in ("base", "lora"):
        if type_ not in ("all", kind):
            continue
        found, page = _pages(
            client, f"{ENDPOINT}/{kind}", limit=limit, offset=offset, all_pages=all_pages
        )
        items.extend({**item, "type": kind} for item in found)
        if isinstance(page.get("next_offset"), int):
            more[kind] = page["next_offset"]
        if kind == "lora" and "active_deployments" in page:
            extra["active_deployments"] = page.get("active_deployments")
            extra["max_active_deployments"] = page.get("max_active_deployments")
    extra["next_offsets"] = more
    output.emit_list(
        items,
        columns=COLUMNS,
        plain=lambda m: (
            f"{m.get('model_name')}\t{m.get('type')}\t{m.get('deployment_status') or '-'}"
        ),
        title="Models",
        empty="No models yet. A training run's checkpoints become LoRA models.",
        extra=extra,
    )
    quota = quota_text(extra)
    if quota:
        output.progress(quota)
    if more:
        output.progress(f"More: --offset {max(more.values())} (or --all)")


def _lora(client: PlatformClient, name: str) -> dict[str, Any] | None:
    try:
        found = client.request("GET", f"{ENDPOINT}/{quote(name, safe='')}")
    except CLIError as error:
        if error.code is CLIErrorCode.NOT_FOUND:
            return None
        raise
    return found if isinstance(found, dict) else None


def show_model(name: str, output: Output) -> None:
    """A LoRA model by name, else a base model by name or Hugging Face path."""
    client = PlatformClient.from_login()
    if "/" not in name:
        lora = _lora(client, name)
        if lora is not None:
            output.emit_detail({**lora, "type": "lora"}, title=f"LoRA model {name}")
            _deployment_hint(lora, output)
            return
    try:
        base = client.request("GET", f"{ENDPOINT}/base/{quote(name, safe='')}")
    except CLIError as error:
        if error.code is CLIErrorCode.NOT_FOUND:
            raise CLIError(
                CLIErrorCode.NOT_FOUND,
                f"No LoRA or base model named {name!r}. See 'osmosis model list'.",
                details={"model": name},
            ) from None
        raise
    if not isinstance(base, dict):
        raise CLIError(CLIErrorCode.PLATFORM_ERROR, "The platform returned no model.")
    output.emit_detail({**base, "type": "base"}, title=f"Base model {name}")


def _deployment_hint(model: Mapping[str, Any], output: Output) -> None:
    status = model.get("deployment_status")
    if status is None:
        return  # inference is not available to this workspace
    if status == "active":
        output.progress(
            f"Serving inference. Undeploy with: osmosis model undeploy {model.get('model_name')}"
        )
    else:
        output.progress(f"Deploy with: osmosis model deploy {model.get('model_name')}")


def set_deployment(name: str, output: Output, *, deploy: bool) -> None:
    """``model deploy NAME`` / ``model undeploy NAME`` (LoRA models only)."""
    if "/" in name:
        raise CLIError(
            CLIErrorCode.VALIDATION,
            f"{name!r} is a base model path; only LoRA models (see 'osmosis model list --type "
            "lora') are deployed.",
            details={"model": name},
        )
    client = PlatformClient.from_login()
    verb = "deploy" if deploy else "undeploy"
    try:
        result = client.request("POST", f"{ENDPOINT}/{quote(name, safe='')}/{verb}")
    except CLIError as error:
        if deploy and error.code is CLIErrorCode.CONFLICT:
            raise CLIError(
                CLIErrorCode.CONFLICT,
                f"{error.message} Free a slot with 'osmosis model undeploy NAME' (deployed "
                "models: 'osmosis model list --type lora').",
                details=error.details,
            ) from None
        raise
    resource = result if isinstance(result, dict) else {"model_name": name}
    output.emit_operation(
        f"model.{verb}",
        message=f"LoRA model {resource.get('model_name') or name} "
        f"{'deployed' if deploy else 'undeployed'} (status: {resource.get('status')}).",
        resource=resource,
        next_steps=[f"osmosis model info {resource.get('model_name') or name}"],
    )
