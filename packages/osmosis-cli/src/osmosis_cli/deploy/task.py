"""The SkyPilot task ``osmosis rollout deploy`` generates: one rollout server per cluster.

Why one single-node cluster per server (``<name>-0`` ... ``<name>-N-1``) rather than one
``num_nodes: N`` cluster: the servers are independent (no gang scheduling), SkyPilot reports a
public endpoint per cluster (``sky status --endpoint PORT CLUSTER``; only the head's for a
multi-node cluster), and a lost node is one lost server, which ``eval run --servers`` already
survives.

What the task does on each node:

* ``setup`` installs the rollout's dependencies from its ``pyproject.toml`` (with ``uv pip
  install -r pyproject.toml`` into ``.venv`` of the synced workdir) plus ``osmosis-ai[server]``;
* ``run`` serves the rollout with ``osmosis rollout serve --host 0.0.0.0 --port PORT --workers W``,
  waits until its own ``/health`` answers (the readiness check) and prints one ``ready`` line.

No value of any secret is ever written: ``secrets:`` lists names with ``null`` (SkyPilot then
requires them at launch, ``sky launch --secret NAME`` reading NAME from the launching shell).
The server's inbound key ``OSMOSIS_ROLLOUT_API_KEY`` is always one of them.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osmosis_ai.errors import ConfigurationError

INBOUND_KEY_ENV = "OSMOSIS_ROLLOUT_API_KEY"
DEFAULT_PORT = 8000
_SECRET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CLUSTER_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,50}[a-z0-9])?$")


class DeploySpecError(ConfigurationError):
    """A deploy option is wrong; the message says which and how to fix it."""


@dataclass(slots=True)
class FleetOptions:
    """How many rollout servers to run and what each one gets: the ``rollout deploy`` options
    that are not about which rollout (the command passes them through as they are)."""

    nodes: int = 1
    workers: str = "auto"
    port: int = DEFAULT_PORT
    cpus: str = "4+"
    memory: str | None = None
    infra: str | None = None
    use_spot: bool = False
    secrets: list[str] = field(default_factory=list)


@dataclass(slots=True)
class DeploySpec:
    """What to deploy: a rollout (``rollout_dir`` inside ``workspace``) on ``fleet.nodes``
    servers."""

    name: str
    workspace: Path
    rollout_dir: Path
    entrypoint: Path
    fleet: FleetOptions = field(default_factory=FleetOptions)
    osmosis_requirement: str = "osmosis-ai[server]"

    def check(self) -> None:
        if not _CLUSTER_NAME.match(self.name):
            raise DeploySpecError(
                f"--name {self.name!r} is not a valid cluster name: lower-case letters, digits "
                "and '-', starting with a letter (e.g. 'osmosis-gsm8k')"
            )
        fleet = self.fleet
        if fleet.nodes < 1:
            raise DeploySpecError(f"--nodes must be at least 1, got {fleet.nodes}")
        if not 1 <= fleet.port <= 65535:
            raise DeploySpecError(f"--port must be 1..65535, got {fleet.port}")
        for name in fleet.secrets:
            if not _SECRET_NAME.match(name):
                raise DeploySpecError(  # the argument is not echoed: it may hold a value
                    "--secret takes an environment variable NAME, not NAME=VALUE: the value is "
                    "read from your shell at launch and never written to a file"
                )
        if not self.pyproject.is_file():
            raise DeploySpecError(
                f"{self.rollout_dir} has no pyproject.toml: the servers install the rollout's "
                "dependencies from it. Create one listing them (osmosis rollout init writes it)."
            )

    @property
    def pyproject(self) -> Path:
        return self.rollout_dir / "pyproject.toml"

    @property
    def clusters(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.fleet.nodes)]

    @property
    def secret_names(self) -> list[str]:
        return [
            INBOUND_KEY_ENV,
            *(s for s in dict.fromkeys(self.fleet.secrets) if s != INBOUND_KEY_ENV),
        ]


def build_task(spec: DeploySpec) -> dict[str, Any]:
    """The task as a mapping in SkyPilot's task-YAML schema."""
    rollout = spec.rollout_dir.relative_to(spec.workspace).as_posix()
    entry = spec.entrypoint.relative_to(spec.rollout_dir).as_posix()
    fleet = spec.fleet
    resources: dict[str, Any] = {"cpus": fleet.cpus, "ports": fleet.port}
    if fleet.memory:
        resources["memory"] = fleet.memory
    if fleet.infra:
        resources["infra"] = fleet.infra
    if fleet.use_spot:
        resources["use_spot"] = True
    return {
        "name": spec.name,
        "num_nodes": 1,
        "workdir": str(spec.workspace),  # synced to ~/sky_workdir on every node
        "resources": resources,
        "envs": {
            "OSMOSIS_ROLLOUT_DIR": rollout,
            "OSMOSIS_ROLLOUT_ENTRYPOINT": entry,
            "OSMOSIS_ROLLOUT_WORKERS": fleet.workers,
            "_OSMOSIS_ROLLOUT_PORT": str(fleet.port),
        },
        "secrets": {name: None for name in spec.secret_names},
        "setup": _SETUP.format(requirement=shlex.quote(spec.osmosis_requirement)),
        "run": _RUN,
    }


_SETUP = """\
set -euo pipefail
cd "$OSMOSIS_ROLLOUT_DIR"
python3 -m pip install --quiet --upgrade uv
python3 -m uv venv --quiet --allow-existing .venv
# the rollout's own dependencies, from its pyproject.toml, and the server
python3 -m uv pip install --quiet --python .venv -r pyproject.toml {requirement}
"""

_RUN = """\
set -euo pipefail
cd "$OSMOSIS_ROLLOUT_DIR"
.venv/bin/osmosis rollout serve "$OSMOSIS_ROLLOUT_ENTRYPOINT" --host 0.0.0.0 \\
  --port "$_OSMOSIS_ROLLOUT_PORT" --workers "$OSMOSIS_ROLLOUT_WORKERS" &
server=$!
# readiness: the server's own /health, with its inbound key, before reporting ready
for _ in $(seq 600); do
  if ! kill -0 "$server" 2>/dev/null; then echo "osmosis: rollout server exited" >&2; exit 1; fi
  if curl -fsS -o /dev/null -H "authorization: Bearer $OSMOSIS_ROLLOUT_API_KEY" \\
      "http://127.0.0.1:$_OSMOSIS_ROLLOUT_PORT/health"; then
    echo "osmosis: rollout server ready on port $_OSMOSIS_ROLLOUT_PORT"
    break
  fi
  sleep 1
done
wait "$server"
"""


def render_yaml(task: dict[str, Any], header: str = "") -> str:
    """``task`` as YAML: scalars as JSON (a YAML subset), multi-line strings as ``|`` blocks."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    _emit(task, 0, lines)
    return "\n".join(lines) + "\n"


def _emit(mapping: dict[str, Any], indent: int, lines: list[str]) -> None:
    pad = " " * indent
    for key, value in mapping.items():
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:")
            _emit(value, indent + 2, lines)
        elif isinstance(value, str) and "\n" in value:
            lines.append(f"{pad}{key}: |")
            lines.extend(f"{pad}  {line}".rstrip() for line in value.rstrip("\n").splitlines())
        else:
            lines.append(f"{pad}{key}: {_scalar(value)}")


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(str(value))
