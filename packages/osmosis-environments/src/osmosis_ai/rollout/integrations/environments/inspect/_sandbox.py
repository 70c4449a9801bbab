"""Inspect sandboxes on Harbor's local sandbox (``osmosis-harbor``'s Docker-free environment).

A task whose sandbox is ``local``, or ``docker`` with no compose file or Dockerfile of its own
(Inspect's own resolution, ``resolve_task_sandbox``, decides), runs each sample in a fresh
:class:`~osmosis_ai.rollout.backend.harbor.local_environment.NamespaceSandbox`: a private mount
namespace over a copy-on-write overlay of this machine's root filesystem, the same sandbox
``harbor:...?sandbox=local`` trials run in. Inspect drives it through its own sandbox API
(registered as the sandbox type ``osmosis-harbor-local``): its ``sandboxenv_context`` copies the
sample's ``files``, runs its ``setup`` and cleans up, and ``sandbox()`` in tools and scorers
reaches it. Anything else (a custom image, a compose file, another provider) is refused by name.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    sandboxenv,
)

from osmosis_ai.rollout.integrations.environments import EnvironmentSpecError
from osmosis_ai.rollout.optional_imports import install_hint

if TYPE_CHECKING:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.util import SandboxEnvironmentSpec

    from osmosis_ai.rollout.backend.harbor.local_environment import NamespaceSandbox

#: The Inspect sandbox type this module registers.
SANDBOX_TYPE = "osmosis-harbor-local"
#: The sandbox's working directory (relative paths of exec, read_file and write_file).
WORKDIR = "/inspect"
#: Inspect sandbox types mapped onto Harbor's local sandbox when they carry no configuration.
MAPPED_TYPES = ("local", "docker")


def _namespace_sandbox() -> NamespaceSandbox:
    try:
        from osmosis_ai.rollout.backend.harbor.local_environment import NamespaceSandbox
    except ModuleNotFoundError as exc:
        raise EnvironmentSpecError(
            f"This Inspect task needs a sandbox, which osmosis runs in Harbor's local sandbox: "
            f"{install_hint('harbor')}"
        ) from exc
    return NamespaceSandbox()


def mapped_sandbox(
    spec: SandboxEnvironmentSpec | None, where: str
) -> SandboxEnvironmentSpec | None:
    """``spec`` as the sandbox osmosis runs (``None``: no sandbox); raises, naming ``where``
    and what to do, for a sandbox that cannot run on Harbor's local sandbox."""
    from inspect_ai.util import SandboxEnvironmentSpec

    if spec is None:
        return None
    if spec.type not in MAPPED_TYPES:
        raise EnvironmentSpecError(
            f"{where} needs the Inspect sandbox {spec.type!r}, which osmosis cannot provide: only "
            f"{' and '.join(repr(t) for t in MAPPED_TYPES)} without a configuration run (on "
            "Harbor's local sandbox). Run the task with `inspect eval`, or as a Harbor task."
        )
    if spec.config is not None:
        raise EnvironmentSpecError(
            f"{where} needs the Inspect sandbox {spec.type!r} with its own configuration "
            f"({spec.config!r}: a custom image or compose file), which needs Docker; osmosis runs "
            "only unconfigured 'local'/'docker' sandboxes (on Harbor's local sandbox, the host's "
            "own userland). Run the task with `inspect eval --sandbox docker`, or drop the "
            "configuration if the task needs nothing the host lacks."
        )
    return SandboxEnvironmentSpec(SANDBOX_TYPE)


def task_sandbox(task: Task) -> SandboxEnvironmentSpec | None:
    """The task's sandbox as osmosis runs it, resolved by Inspect (a ``compose.yaml`` or
    ``Dockerfile`` next to the task file counts as the task's configuration)."""
    from inspect_ai._eval.loader import resolve_task_sandbox

    where = f"Inspect task {task.name!r}"
    if task.sandbox is None or mapped_sandbox(task.sandbox, where) is None:
        return None
    return mapped_sandbox(resolve_task_sandbox(task, None), where)


def require_local_sandbox() -> None:
    """Raise with the install command unless Harbor's local sandbox (osmosis-harbor) is here."""
    _namespace_sandbox()


def sample_sandbox(task: Task, sample: Sample) -> Sample:
    """``sample`` with its own sandbox (if any) mapped; checked when the task is loaded."""
    if sample.sandbox is None:
        return sample
    mapped = mapped_sandbox(sample.sandbox, f"Sample {sample.id!r} of Inspect task {task.name!r}")
    return sample.model_copy(update={"sandbox": mapped})


@sandboxenv(name=SANDBOX_TYPE)
class HarborLocalSandbox(SandboxEnvironment):
    """One sample's Harbor local sandbox, as an Inspect ``SandboxEnvironment``."""

    def __init__(self, sandbox: NamespaceSandbox) -> None:
        super().__init__()
        self._sandbox = sandbox

    @classmethod
    async def sample_init(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, metadata: dict[str, str]
    ) -> dict[str, SandboxEnvironment]:
        sandbox = _namespace_sandbox()
        await sandbox.start(workdir=WORKDIR)
        return {"default": cls(sandbox)}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for environment in environments.values():
            await environment.as_type(cls)._sandbox.stop()

    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,  # noqa: ASYNC109 (Inspect's signature)
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        if user is not None and user not in ("root", "0", str(os.geteuid())):
            import inspect_ai.util

            # SandboxUserUnsupportedError (a RuntimeError) is newer than inspect-ai 0.3.262
            unsupported = getattr(inspect_ai.util, "SandboxUserUnsupportedError", RuntimeError)
            raise unsupported(
                f"Harbor's local sandbox runs everything as the calling user; cannot run as {user!r}"
            )
        directory = cwd if cwd is None or cwd.startswith("/") else f"{WORKDIR}/{cwd}"
        data = input.encode() if isinstance(input, str) else input
        code, stdout, stderr = await self._sandbox.run(
            cmd, cwd=directory, env=env, timeout_sec=timeout, input=data
        )
        limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
        if len(stdout) + len(stderr) > limit:
            raise OutputLimitExceededError(
                limit_str=SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR,
                truncated_output=stdout[:limit].decode(errors="replace"),
            )
        return ExecResult(
            success=code == 0,
            returncode=code,
            stdout=stdout.decode(errors="replace"),
            stderr=stderr.decode(errors="replace"),
        )

    async def write_file(self, file: str, contents: str | bytes) -> None:
        data = contents.encode() if isinstance(contents, str) else contents
        await asyncio.to_thread(_write, self._sandbox.inside(file), data)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        from inspect_ai.util._sandbox.limits import verify_read_file_size

        path = self._sandbox.inside(file)
        verify_read_file_size(str(path))
        data = await asyncio.to_thread(path.read_bytes)
        return data.decode("utf-8") if text else data


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
