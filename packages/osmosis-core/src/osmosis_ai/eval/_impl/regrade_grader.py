"""Where a regrade's grader comes from, and the environment it runs in
(:mod:`osmosis_ai.eval._impl.regrade`).

* ``grader="module:Class"`` / ``"path/to/file.py:Class"`` or a class: imported (the source
  run's rollout folder, then the current folder, first on ``sys.path``; a module this process
  imported before is reloaded, so an edited grader is the one that runs);
* ``config=`` an eval config: the grader its rollout's ``LocalBackend`` was built with;
* neither: the source run's own rollout's grader (its entrypoint imported).

While importing and grading, the source run's ``[env]`` is applied and LLM judges use the
on-disk verdict cache (``$OSMOSIS_JUDGE_CACHE``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from osmosis_ai.errors import EvalError
from osmosis_ai.eval._impl.plan.options import PathLike

if TYPE_CHECKING:
    from osmosis_ai.eval._impl.regrade import RegradeOptions


class RegradeError(EvalError, ValueError):
    """The regrade cannot run as asked; the message says what to fix."""


@contextlib.contextmanager
def applied_env(env: Mapping[str, str]) -> Iterator[None]:
    """The source run's ``[env]`` (values a rollout's grader may read at import or grading)."""
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def judge_cache(setting: PathLike | bool) -> Iterator[None]:
    """Judges built while regrading use the verdict cache (``$OSMOSIS_JUDGE_CACHE``)."""
    from osmosis_ai.eval.judge.cache import CACHE_ENV

    previous = os.environ.get(CACHE_ENV)
    if setting is False:
        os.environ.pop(CACHE_ENV, None)
    elif setting is not True:
        os.environ[CACHE_ENV] = os.fspath(setting)
    elif previous is None:
        from osmosis_ai.rollout.home import osmosis_home

        os.environ[CACHE_ENV] = str(osmosis_home() / "judge-cache")
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = previous


def resolve_grader(
    opts: RegradeOptions, manifest: Mapping[str, Any], src: Path
) -> tuple[Any, str, Path | None]:
    """A zero-argument grader factory, how it was named, and its module's file."""
    from osmosis_ai.rollout.grader import Grader

    provenance = manifest.get("provenance") or {}
    rollout_dir = provenance.get("rollout_dir")
    grader = opts.grader
    if isinstance(grader, type):
        cls, config = grader, opts.grader_config
        label = f"{cls.__module__}:{cls.__qualname__}"
    elif isinstance(grader, str):
        cls = _import_grader(grader, Path(rollout_dir) if rollout_dir else None)
        config = opts.grader_config
        label = grader
    else:
        cls, config, label = _rollout_grader(opts.config, manifest, src)
    if not (isinstance(cls, type) and issubclass(cls, Grader)):
        raise RegradeError(f"{label} is not a Grader subclass (osmosis_ai.rollout.Grader)")
    try:
        file = inspect.getsourcefile(cls)
    except TypeError:
        file = None

    def build() -> Grader:
        return cls(config) if config is not None else cls()

    return build, label, Path(file) if file else None


def _import_grader(spec: str, rollout_dir: Path | None) -> Any:
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise RegradeError(
            f"--grader {spec!r} is not MODULE:CLASS; e.g. --grader graders:StrictGrader or "
            "--grader rollouts/x/graders.py:StrictGrader"
        )
    added: list[str] = []
    if module_name.endswith(".py"):
        file = Path(module_name).expanduser().resolve()
        if not file.is_file():
            raise RegradeError(f"--grader {spec!r}: {file} does not exist")
        spec_obj = importlib.util.spec_from_file_location(
            f"_osmosis_regrade_{hashlib.sha256(str(file).encode()).hexdigest()[:12]}", file
        )
        assert spec_obj is not None
        assert spec_obj.loader is not None
        module = importlib.util.module_from_spec(spec_obj)
        sys.path.insert(0, str(file.parent))
        added.append(str(file.parent))
        try:
            spec_obj.loader.exec_module(module)
        except Exception as exc:
            raise RegradeError(f"--grader {spec!r}: importing {file} failed: {exc!r}") from exc
        finally:
            for path in added:
                with contextlib.suppress(ValueError):
                    sys.path.remove(path)
    else:
        for path in (rollout_dir, Path.cwd()):
            if path is not None and str(path) not in sys.path:
                sys.path.insert(0, str(path))
                added.append(str(path))
        try:
            known = sys.modules.get(module_name)
            # Imported before in this process (a notebook regrading after an edit): reload it.
            module = importlib.reload(known) if known else importlib.import_module(module_name)
        except ImportError as exc:
            raise RegradeError(
                f"--grader {spec!r}: cannot import {module_name!r} ({exc}); it is looked up in "
                f"the source run's rollout folder ({rollout_dir}) and the current folder"
            ) from exc
        finally:
            for path in added:
                with contextlib.suppress(ValueError):
                    sys.path.remove(path)
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise RegradeError(f"--grader {spec!r}: {module_name} has no {attr!r}") from exc


def _rollout_grader(
    config: PathLike | None, manifest: Mapping[str, Any], src: Path
) -> tuple[Any, Any, str]:
    """The grader class and config the rollout's ``LocalBackend`` was built with."""
    from osmosis_ai.rollout.entrypoint import RolloutEntrypointError, load_rollout_app

    if config is not None:
        from osmosis_ai.eval._impl.plan.source import EvalPlanError, resolve_source

        try:
            source = resolve_source(Path(config))
        except EvalPlanError as exc:
            raise RegradeError(f"--config {config}: {exc}") from exc
        rollout_dir, entrypoint = source.rollout_dir, source.entrypoint_label
        os.environ.update(source.env)
    else:
        provenance = manifest.get("provenance") or {}
        rollout = (manifest.get("inputs") or {}).get("rollout") or {}
        if not provenance.get("rollout_dir"):
            raise RegradeError(
                f"{src} does not record its rollout folder; pass --grader MODULE:CLASS"
            )
        rollout_dir = Path(provenance["rollout_dir"])
        entrypoint = rollout.get("entrypoint") or "main.py"
        if not rollout_dir.is_dir():
            raise RegradeError(
                f"the source run's rollout folder {rollout_dir} is gone; pass --grader "
                "MODULE:CLASS or --config CONFIG"
            )
    try:
        app = load_rollout_app(rollout_dir, entrypoint)
    except RolloutEntrypointError as exc:
        raise RegradeError(f"importing {rollout_dir}/{entrypoint} failed: {exc}") from exc
    backend = getattr(
        getattr(getattr(app, "state", None), "rollout_service", None), "backend", None
    )
    cls = getattr(backend, "grader_cls", None)
    if cls is None:
        raise RegradeError(
            f"the rollout at {rollout_dir} has no in-process grader (a Harbor task grades in "
            "its sandbox); pass --grader MODULE:CLASS"
        )
    return cls, getattr(backend, "grader_config", None), f"{cls.__module__}:{cls.__qualname__}"
