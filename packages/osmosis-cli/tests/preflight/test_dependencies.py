"""Declared-dependency check of the preflight (reads package metadata, imports nothing)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from osmosis_cli.preflight.dependencies import check_declared_dependencies


def _pyproject(tmp_path: Path, deps: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "r"\nversion = "0"\ndependencies = {deps}\n', encoding="utf-8"
    )
    return tmp_path


def test_satisfied_missing_and_out_of_range(tmp_path: Path) -> None:
    core = metadata.version("osmosis-core")
    report = check_declared_dependencies(
        _pyproject(
            tmp_path,
            f'["osmosis-core=={core}", "packaging", "not-a-real-dist-xyz", "osmosis-core<0.0.1", '
            "\"missing-only-on-windows; sys_platform == 'win32'\"]",
        )
    )
    assert report.problem is None
    assert report.unsatisfied == [
        "not-a-real-dist-xyz is not installed (needs not-a-real-dist-xyz)",
        f"osmosis-core {core} is installed, but osmosis-core<0.0.1 is required",
    ]


def test_extras_are_checked(tmp_path: Path) -> None:
    # osmosis-core[server] needs fastapi and uvicorn; the result depends on whether they are
    # installed, and must agree with the installed metadata.
    def installed(dist: str) -> bool:
        try:
            metadata.version(dist)
        except metadata.PackageNotFoundError:
            return False
        return True

    report = check_declared_dependencies(_pyproject(tmp_path, '["osmosis-core[server]"]'))
    expected_missing = [d for d in ("fastapi", "uvicorn") if not installed(d)]
    assert [u.split()[0] for u in report.unsatisfied] == expected_missing
    assert all("(for osmosis-core[server])" in u for u in report.unsatisfied)


def test_missing_or_malformed_pyproject(tmp_path: Path) -> None:
    assert "no pyproject.toml" in (check_declared_dependencies(tmp_path).problem or "")
    (tmp_path / "pyproject.toml").write_text("[project\n", encoding="utf-8")
    assert "could not be read" in (check_declared_dependencies(tmp_path).problem or "")
