"""The task `osmosis rollout deploy` generates, read by SkyPilot's own parser (no cloud access,
no credentials): schema validation and ``sky.Task.from_yaml``. Runs where skypilot is installed
(the ``fleet`` nox session); skipped elsewhere."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from eval_support import write_tiny_workspace

OSMOSIS = str(Path(sys.executable).with_name("osmosis"))
KEY_VALUE = "inbound-key-value-31337"
HF_VALUE = "hf_value_424242"


def test_skypilot_parses_the_generated_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # SkyPilot keeps its state under ~/.sky
    sky = pytest.importorskip("sky", reason="the fleet nox session installs skypilot")
    from sky.utils import common_utils, schemas

    ws = tmp_path / "ws"
    write_tiny_workspace(ws, core_path=Path(__file__).parents[2] / "packages" / "osmosis-core")
    options = ("--nodes", "3", "--workers", "4", "--secret", "HF_TOKEN", "--infra", "aws")
    done = subprocess.run(
        [OSMOSIS, "rollout", "deploy", "rollouts/tiny", "--dry-run", *options, "--use-spot"],
        cwd=ws,
        capture_output=True,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path / "home"),
            "OSMOSIS_ROLLOUT_API_KEY": KEY_VALUE,
            "HF_TOKEN": HF_VALUE,
        },
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert KEY_VALUE not in done.stdout
    assert HF_VALUE not in done.stdout
    task_file = tmp_path / "task.yaml"
    task_file.write_text(done.stdout)

    import yaml

    config = yaml.safe_load(done.stdout)
    common_utils.validate_schema(config, schemas.get_task_schema(), "Invalid task YAML: ")
    task = sky.Task.from_yaml(str(task_file))
    assert task.name == "osmosis-tiny"
    assert task.num_nodes == 1  # one cluster per server (--nodes 3: three clusters)
    assert task.envs["OSMOSIS_ROLLOUT_WORKERS"] == "4"
    assert task.envs["OSMOSIS_ROLLOUT_DIR"] == "rollouts/tiny"
    assert config["secrets"] == {"OSMOSIS_ROLLOUT_API_KEY": None, "HF_TOKEN": None}
    (resources,) = task.resources
    assert resources.use_spot
    assert list(resources.ports or []) == ["8000"]
    assert task.run is not None
    assert "/health" in str(task.run)
    assert task.setup is not None
    assert "-r pyproject.toml" in str(task.setup)
