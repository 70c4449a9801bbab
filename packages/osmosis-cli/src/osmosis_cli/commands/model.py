"""``osmosis model list | info | deploy | undeploy`` (platform models and LoRA deployments)."""

from __future__ import annotations

from typing import Annotated

import typer

from osmosis_cli.cli_app import new_typer
from osmosis_cli.commands.options import AllPages, PageLimit, PageOffset

app = new_typer("model", help="List models and deploy LoRA models for inference.")

ModelName = Annotated[
    str,
    typer.Argument(help="LoRA model name, or a base model's Hugging Face path.", metavar="MODEL"),
]
LoraName = Annotated[str, typer.Argument(help="LoRA model name.", metavar="LORA_MODEL")]


@app.command("list")
def list_command(
    type_: Annotated[str, typer.Option("--type", help="Which models: all, base or lora.")] = "all",
    limit: PageLimit = 50,
    offset: PageOffset = 0,
    all_pages: AllPages = False,
) -> None:
    """List base models and the LoRA models your training runs produced."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.models import list_models

    list_models(get_output(), type_=type_, limit=limit, offset=offset, all_pages=all_pages)


@app.command("info")
def info_command(name: ModelName) -> None:
    """Show a LoRA model (training run, checkpoint, deployment) or a base model."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.models import show_model

    show_model(name, get_output())


@app.command("deploy")
def deploy_command(name: LoraName) -> None:
    """Deploy (or reactivate) a LoRA model for inference."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.models import set_deployment

    set_deployment(name, get_output(), deploy=True)


@app.command("undeploy")
def undeploy_command(name: LoraName) -> None:
    """Stop serving a LoRA model (frees a deployment slot)."""
    from osmosis_cli.output import get_output
    from osmosis_cli.platform.models import set_deployment

    set_deployment(name, get_output(), deploy=False)
