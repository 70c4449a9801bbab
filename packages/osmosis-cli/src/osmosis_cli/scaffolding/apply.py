"""``osmosis template apply``: copy a template into the workspace."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from osmosis_cli.scaffolding.catalog import Template
from osmosis_cli.scaffolding.writer import WritePlan, WriteResult, apply_plan, read_files


@dataclass
class AppliedTemplate:
    template: Template
    result: WriteResult
    destinations: list[str]

    def resource(self) -> dict[str, object]:
        return {
            "name": self.template.name,
            "destinations": self.destinations,
            "files": self.result.written,
            "unchanged": self.result.unchanged,
            "replaced": self.result.replaced_dirs,
        }

    def next_steps(self) -> list[str]:
        name = self.template.name
        return [
            f"uv pip install -e rollouts/{name}   (or: pip install -e rollouts/{name})",
            f"osmosis rollout validate configs/eval/{name}.toml",
            f"osmosis rollout serve rollouts/{name}/main.py",
            f"osmosis eval run configs/eval/{name}.toml",
            f"osmosis train submit configs/training/{name}.toml",
        ]


def apply_template(template: Template, workspace: Path, *, force: bool) -> AppliedTemplate:
    files = dict(template.files())
    plan = WritePlan(
        workspace=workspace,
        files=read_files(files),
        owned_dirs=(template.owned_dir,),
    )
    result = apply_plan(plan, force=force, what=f"Template '{template.name}'")
    destinations = sorted({_destination(rel, template) for rel in files})
    return AppliedTemplate(template=template, result=result, destinations=destinations)


def _destination(rel: str, template: Template) -> str:
    owned = template.owned_dir
    return owned if rel.startswith(owned + "/") else rel
