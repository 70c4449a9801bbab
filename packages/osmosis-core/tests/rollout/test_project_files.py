"""iter_project_files: the one definition of a rollout project's files."""

from __future__ import annotations

from pathlib import Path

from osmosis_ai.rollout.project_files import iter_project_files


def _tree(root: Path) -> None:
    for rel in [
        "main.py",
        "pkg/tool.py",
        "pkg/__pycache__/tool.cpython-312.pyc",
        ".venv/lib/site.py",
        "build/lib/main.py",
        "demo.egg-info/PKG-INFO",
        "uv.lock",
        "out/run/manifest.json",
    ]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
    (root / "link.py").symlink_to(root / "main.py")


def test_leaves_out_caches_venvs_builds_symlinks_and_excluded_folders(tmp_path: Path) -> None:
    _tree(tmp_path)
    files = [p.relative_to(tmp_path).as_posix() for p in iter_project_files(tmp_path)]
    assert files == ["main.py", "uv.lock", "out/run/manifest.json", "pkg/tool.py"]
    files = [
        p.relative_to(tmp_path).as_posix()
        for p in iter_project_files(tmp_path, exclude=[tmp_path / "out"], skip_names={"uv.lock"})
    ]
    assert files == ["main.py", "pkg/tool.py"]
