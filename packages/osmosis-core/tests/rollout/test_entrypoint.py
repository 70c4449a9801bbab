"""The one entrypoint loader used by ``rollout validate``, ``rollout serve`` and ``eval run``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from osmosis_ai.errors import ConfigurationError
from osmosis_ai.rollout.entrypoint import (
    RolloutEntrypointError,
    import_entrypoint,
    load_rollout_app,
)


def _rollout(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    root = tmp_path / name
    root.mkdir()
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_relative_and_sibling_imports_work_and_main_block_does_not_run(tmp_path: Path) -> None:
    root = _rollout(
        tmp_path,
        "rel",
        {
            "tools.py": "VALUE = 6\n",
            "helpers.py": "FACTOR = 7\n",
            "main.py": (
                "from .tools import VALUE\n"
                "import helpers\n"
                "app = VALUE * helpers.FACTOR\n"
                "if __name__ == '__main__':\n"
                "    raise SystemExit('the __main__ block ran')\n"
            ),
        },
    )
    assert load_rollout_app(root, "main.py") == 42


def test_same_module_name_in_two_rollouts_does_not_collide(tmp_path: Path) -> None:
    one = _rollout(tmp_path, "one", {"main.py": "app = 'one'\n"})
    two = _rollout(tmp_path, "two", {"main.py": "app = 'two'\n"})
    assert load_rollout_app(one) == "one"
    assert load_rollout_app(two) == "two"


def test_create_app_factory_is_used_when_there_is_no_app(tmp_path: Path) -> None:
    root = _rollout(tmp_path, "factory", {"main.py": "def create_app():\n    return 'built'\n"})
    assert load_rollout_app(root) == "built"


def test_missing_dependency_names_the_module(tmp_path: Path) -> None:
    root = _rollout(tmp_path, "dep", {"main.py": "import numpyy_not_installed\napp = 1\n"})
    with pytest.raises(RolloutEntrypointError) as info:
        import_entrypoint(root, root / "main.py")
    error = info.value
    assert isinstance(error, ConfigurationError)
    assert error.kind == "module_not_found"
    assert error.missing_module == "numpyy_not_installed"
    assert "Install the rollout's dependencies" in str(error)
    assert f"{root / 'main.py'}:1: No module named 'numpyy_not_installed'" in str(error)


def test_the_traceback_starts_at_the_rollouts_own_code(tmp_path: Path) -> None:
    """The loader's and importlib's frames above the rollout's first frame are left out."""
    root = _rollout(
        tmp_path,
        "deep",
        {"main.py": "from tools import make\napp = make()\n", "tools.py": "import gone_mod\n"},
    )
    with pytest.raises(RolloutEntrypointError) as info:
        load_rollout_app(root)
    text = info.value.traceback_text
    assert text is not None
    frames = [line.strip() for line in text.splitlines() if line.strip().startswith("File ")]
    assert [frame.split(",")[0] for frame in frames] == [
        f'File "{root / "main.py"}"',
        f'File "{root / "tools.py"}"',
    ], text
    assert text.rstrip().endswith("ModuleNotFoundError: No module named 'gone_mod'")


def test_error_in_rollout_code_points_at_its_line(tmp_path: Path) -> None:
    root = _rollout(tmp_path, "boom", {"main.py": "x = 1\nraise KeyError('contnet')\n"})
    with pytest.raises(RolloutEntrypointError) as info:
        load_rollout_app(root)
    error = info.value
    assert error.kind == "import_error"
    assert error.error_type == "KeyError"
    assert error.file == str(root / "main.py")
    assert error.line == 2
    assert error.traceback_text is not None
    assert "KeyError" in error.traceback_text


def test_sys_exit_at_import_is_reported_not_propagated(tmp_path: Path) -> None:
    root = _rollout(tmp_path, "exits", {"main.py": "raise SystemExit(3)\n"})
    with pytest.raises(RolloutEntrypointError, match="SystemExit"):
        load_rollout_app(root)


def test_no_app_says_what_to_define(tmp_path: Path) -> None:
    root = _rollout(tmp_path, "empty", {"agent.py": "x = 1\n"})
    with pytest.raises(RolloutEntrypointError, match="create_rollout_server") as info:
        load_rollout_app(root, "agent.py")
    assert info.value.kind == "no_app"


def test_entrypoint_outside_the_rollout_is_refused(tmp_path: Path) -> None:
    root = _rollout(tmp_path, "inside", {"main.py": "app = 1\n"})
    (tmp_path / "outside.py").write_text("app = 2\n")
    with pytest.raises(RolloutEntrypointError, match="outside the rollout folder"):
        load_rollout_app(root, tmp_path / "outside.py")


def test_loader_imports_only_the_standard_library() -> None:
    """The eval's server child may run in the rollout's own environment (``--isolated``)."""
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import osmosis_ai.rollout.entrypoint\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "print(sorted(new - set(sys.stdlib_module_names)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['osmosis_ai']"


# Script mode: the 0.3.x scaffold builds its app inside main() and calls uvicorn.run there.

_SCRIPT = """\
import os

import uvicorn

from osmosis_ai.rollout.backend.local import LocalBackend
from osmosis_ai.rollout.server import create_rollout_server

from workflow import Workflow


def main() -> None:
    app = create_rollout_server(backend=LocalBackend(workflow=Workflow))
    uvicorn.run(
        app,
        host="0.0.0.0",
        port=int(os.environ.get("_OSMOSIS_ROLLOUT_PORT", "8000")),
        timeout_keep_alive=2160,
    )
    raise SystemExit("uvicorn.run returned: it was not captured")


if __name__ == "__main__":
    main()
"""

_WORKFLOW = """\
from osmosis_ai.rollout import AgentWorkflow


class Workflow(AgentWorkflow):
    async def run(self, ctx):
        return None
"""


def test_script_mode_main_is_run_with_uvicorn_run_captured(tmp_path: Path) -> None:
    import uvicorn

    real_run = uvicorn.run
    root = _rollout(tmp_path, "script", {"main.py": _SCRIPT, "workflow.py": _WORKFLOW})
    app = load_rollout_app(root)
    assert app.state.rollout_futures is not None  # the app main() built
    script = app.state.osmosis_rollout_script
    assert (script.via, script.host, script.port) == ("main()", "0.0.0.0", 8000)
    assert script.binds_all_interfaces
    assert script.options == {"timeout_keep_alive": 2160}
    # Worker processes reload it the same way.
    assert app.state.osmosis_rollout_entry["target"] == str(root / "main.py")
    assert uvicorn.run is real_run


def test_script_mode_without_main_function_runs_the_main_block(tmp_path: Path) -> None:
    source = _SCRIPT.replace("def main() -> None:", "def build() -> None:").replace(
        "    main()", "    build()"
    )
    root = _rollout(tmp_path, "block", {"main.py": source, "workflow.py": _WORKFLOW})
    app = load_rollout_app(root)
    assert app.state.osmosis_rollout_script.via == "__main__"


def test_script_mode_import_string_is_resolved(tmp_path: Path) -> None:
    source = (
        "import uvicorn\n"
        "app_holder = None\n"
        "def make():\n"
        "    return 'built by factory'\n"
        "def main():\n"
        "    uvicorn.run('main:make', factory=True, host='127.0.0.1', port=9)\n"
    )
    root = _rollout(tmp_path, "string", {"main.py": source})
    assert load_rollout_app(root) == "built by factory"


def test_script_mode_main_that_never_serves_is_no_app(tmp_path: Path) -> None:
    root = _rollout(tmp_path, "idle", {"main.py": "import uvicorn\ndef main():\n    return None\n"})
    with pytest.raises(RolloutEntrypointError) as info:
        load_rollout_app(root)
    assert info.value.kind == "no_app"
    assert "returned without calling `uvicorn.run" in str(info.value)


def test_script_mode_main_raising_is_an_import_error(tmp_path: Path) -> None:
    root = _rollout(
        tmp_path,
        "boom",
        {"main.py": "import uvicorn\ndef main():\n    raise RuntimeError('no backend')\n"},
    )
    with pytest.raises(RolloutEntrypointError) as info:
        load_rollout_app(root)
    assert info.value.kind == "import_error"
    assert "no backend" in str(info.value)


def test_a_main_that_does_not_use_uvicorn_is_never_run(tmp_path: Path) -> None:
    root = _rollout(
        tmp_path, "cli", {"main.py": "def main():\n    raise SystemExit('main() must not run')\n"}
    )
    with pytest.raises(RolloutEntrypointError) as info:
        load_rollout_app(root)
    assert info.value.kind == "no_app"
    assert "create_rollout_server" in str(info.value)
