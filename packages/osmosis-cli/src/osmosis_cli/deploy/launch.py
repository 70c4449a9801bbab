"""Launching and tearing down the fleet with the ``sky`` command, and the servers file.

Why the ``sky`` CLI rather than its Python API: the CLI's flags (``launch -c NAME -y -d --secret
NAME``, ``status --endpoint PORT NAME``, ``down -y NAME``) are SkyPilot's stable, documented
surface, while its Python API changed shape between releases (requests and ``sky.get``), and a
subprocess keeps SkyPilot's ~100 packages out of the osmosis process.

Files, all under ``<workspace>/.osmosis/deploy/<name>/``: ``task.yaml`` (the task, secret
*names* only), ``servers.txt`` (one server URL per line: ``eval run --servers-file``) and
``deploy.json`` (the clusters launched, read by ``--down``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osmosis_ai.atomic_file import write_atomic
from osmosis_ai.errors import OsmosisError
from osmosis_cli.deploy.task import DeploySpec

INSTALL_HINT = (
    "SkyPilot's `sky` command was not found: install it with your cloud's extra, e.g. "
    "pip install 'skypilot[aws]' (or [gcp], [kubernetes], ...), then run `sky check`"
)


class DeployError(OsmosisError, RuntimeError):
    """Launching or tearing down failed; the message says which cluster and why."""


@dataclass(frozen=True, slots=True)
class DeployPaths:
    root: Path

    @classmethod
    def of(cls, workspace: Path, name: str) -> DeployPaths:
        return cls(workspace / ".osmosis" / "deploy" / name)

    @property
    def task(self) -> Path:
        return self.root / "task.yaml"

    @property
    def servers(self) -> Path:
        return self.root / "servers.txt"

    @property
    def record(self) -> Path:
        return self.root / "deploy.json"


def find_sky() -> str:
    found = shutil.which("sky")
    if found is None:
        raise DeployError(INSTALL_HINT)
    return found


Runner = Callable[[list[str], Path], subprocess.CompletedProcess[str]]


def run_sky(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``sky ARGS`` in ``cwd``; the environment passes through (``--secret NAME`` reads it)."""
    return subprocess.run(
        [find_sky(), *args], cwd=cwd, capture_output=True, text=True, env=dict(os.environ)
    )


def launch_commands(spec: DeploySpec, task: Path) -> list[list[str]]:
    """One ``sky launch`` per cluster: detached (the server runs on), secrets by name only."""
    secrets = [arg for name in spec.secret_names for arg in ("--secret", name)]
    return [["launch", "-c", cluster, "-y", "-d", *secrets, str(task)] for cluster in spec.clusters]


def launch(spec: DeploySpec, paths: DeployPaths, runner: Runner = run_sky) -> list[str]:
    """Launch every cluster (in parallel), then write ``servers.txt``; returns the URLs."""
    missing = [name for name in spec.secret_names if not os.environ.get(name)]
    if missing:
        raise DeployError(
            f"set {', '.join(missing)} in your shell before --launch: SkyPilot passes each "
            "secret to the servers from there (it is never written to a file). "
            "OSMOSIS_ROLLOUT_API_KEY is the key `eval run --servers` sends too."
        )
    commands = launch_commands(spec, paths.task)
    with ThreadPoolExecutor(max_workers=min(8, len(commands))) as pool:
        done = list(pool.map(lambda args: runner(args, spec.workspace), commands))
    _write_record(paths, spec, launched=[c for c, d in zip(spec.clusters, done, strict=True)])
    failed = [(c, d) for c, d in zip(spec.clusters, done, strict=True) if d.returncode != 0]
    if failed:
        raise DeployError(
            "sky launch failed for "
            + "; ".join(f"{c}: {_tail(d)}" for c, d in failed)
            + f". Tear down what started with `osmosis rollout deploy --down --name {spec.name}`."
        )
    urls = [endpoint(cluster, spec.fleet.port, spec.workspace, runner) for cluster in spec.clusters]
    write_servers_file(paths.servers, urls, spec.name)
    return urls


def endpoint(cluster: str, port: int, cwd: Path, runner: Runner = run_sky) -> str:
    """The server URL of ``cluster`` (``sky status --endpoint PORT CLUSTER``)."""
    done = runner(["status", "--endpoint", str(port), cluster], cwd)
    value = done.stdout.strip().splitlines()[-1].strip() if done.stdout.strip() else ""
    if done.returncode != 0 or not value:
        raise DeployError(f"cannot get the endpoint of {cluster} port {port}: {_tail(done)}")
    return value if "://" in value else f"http://{value}"


def write_servers_file(path: Path, urls: list[str], name: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (
        f"# rollout servers of `osmosis rollout deploy --name {name}`\n"
        "# use: osmosis eval run CONFIG --servers-file THIS_FILE (key in OSMOSIS_ROLLOUT_API_KEY)\n"
    )
    write_atomic(path, header + "".join(f"{url}\n" for url in urls))


def teardown(workspace: Path, name: str, runner: Runner = run_sky) -> list[str]:
    """``sky down -y`` every cluster the record lists (else ``NAME-*``); returns them."""
    paths = DeployPaths.of(workspace, name)
    clusters = [f"{name}-*"]
    if paths.record.is_file():
        record: dict[str, Any] = json.loads(paths.record.read_text(encoding="utf-8"))
        clusters = list(record.get("clusters") or clusters)
    done = runner(["down", "-y", *clusters], workspace)
    if done.returncode != 0:
        raise DeployError(f"sky down failed: {_tail(done)}")
    paths.servers.unlink(missing_ok=True)
    return clusters


def _write_record(paths: DeployPaths, spec: DeploySpec, launched: list[str]) -> None:
    record = {"name": spec.name, "clusters": launched, "port": spec.fleet.port}
    paths.record.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def _tail(done: subprocess.CompletedProcess[str], lines: int = 5) -> str:
    text = (done.stderr or done.stdout or "").strip().splitlines()[-lines:]
    return " / ".join(text) or f"exit code {done.returncode}"
