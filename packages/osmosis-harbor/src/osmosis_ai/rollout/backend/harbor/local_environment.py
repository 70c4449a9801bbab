"""A Docker-free Harbor environment for tests: a Linux mount namespace over a copy-on-write
overlay of the host's root filesystem.

**For testing only.** It exists so that real Harbor trials (``TrialQueue`` → ``Trial`` → agent →
``Verifier``) run on machines without Docker, such as CI runners, in about 20 ms per
environment. It is not a security boundary:

- the "image" is the host's own userland: ``FROM`` and ``docker_image`` are not pulled. What can
  be honoured of the task's ``environment/Dockerfile`` without a container runtime is replayed
  at start (``WORKDIR``, ``ENV``, ``COPY``/``ADD`` of task files, ``RUN`` steps that need no
  network; ``[environment] workdir`` in ``task.toml`` wins over ``WORKDIR``); a task needing more
  (a ``RUN`` that installs or downloads, an ``ENTRYPOINT`` service, ``docker-compose.yaml``)
  fails at start with :class:`~._dockerfile.UnsupportedEnvironmentError` naming each such step
  (see :mod:`._dockerfile`);
- there is no network namespace: sandboxed code shares the host's network, which is also why it
  can reach a policy server on ``127.0.0.1`` directly (no ``host.docker.internal`` rewriting);
- there are no cgroup limits and the ``user`` of an ``exec`` is ignored (everything runs as the
  calling user, normally root);
- only the root filesystem is overlaid; other host mounts (except ``/dev``, ``/proc`` and
  ``/sys``, which are bound in) are not visible. ``/tmp`` is the host's, copy-on-write like the
  rest: the interpreter running the sandboxed Python (and an editable checkout) may live there,
  as in CI clones and nox venvs under ``/tmp``.

Writes inside the sandbox land in a per-trial upper directory that is deleted by :meth:`stop`, so
the host is left untouched. The scratch directory (``<tmp>/osmosis-localns-*``) carries an
``owner.json`` naming the creating process and the holder, so a sandbox whose owner died (a
killed run) is found and removed by :func:`._sandbox_owner.sweep_orphans`. It needs root (or unprivileged user namespaces), ``unshare``,
``nsenter`` and overlayfs. Harbor loads it by import path::

    EnvironmentConfig(import_path=LOCAL_ENVIRONMENT_IMPORT_PATH, kwargs={"auto_mounting": True})

``auto_mounting`` makes Harbor 0.26+ bind the trial's log directories into the sandbox (it is
ignored by 0.20, which always passes them as mounts).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities
from osmosis_ai.errors import BackendError

from ._dockerfile import ImagePlan, Step, is_archive, plan_image
from ._sandbox_owner import LOCAL_PREFIX, kill_sandbox_processes, label_local
from ._sandbox_paths import LOG_DIRS

LOCAL_ENVIRONMENT_IMPORT_PATH = (
    "osmosis_ai.rollout.backend.harbor.local_environment:LocalNamespaceEnvironment"
)

# Inherited from the host so that the host's interpreters and tools resolve inside the sandbox.
_PASSTHROUGH_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "PYENV_ROOT", "UV_CACHE_DIR", "TERM")
_READY = b"OSMOSIS-SANDBOX-READY"
_START_TIMEOUT_SEC = 30.0


class LocalSandboxError(BackendError):
    """The namespace sandbox could not be created or used (see the message for the cause)."""


async def _spawn_group(
    argv: list[str], *, stdin: int | None = None, env: dict[str, str] | None = None
) -> asyncio.subprocess.Process:
    """Start ``argv`` in a new session, stdout and stderr piped: its own process group, which
    :func:`_kill_group` ends together with everything it started."""
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        start_new_session=True,
    )


async def _kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGKILL ``process``'s group (started by :func:`_spawn_group`) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


class NamespaceSandbox:
    """A private mount namespace over an overlay of ``/``, kept alive by a holder process.

    Used by :class:`LocalNamespaceEnvironment` and usable on its own (tests back a stub
    SkyPilot SDK with it). ``binds`` maps host directories to sandbox paths.
    """

    def __init__(self) -> None:
        self._holder: asyncio.subprocess.Process | None = None
        self._scratch: Path | None = None
        self.workdir: str | None = None

    @property
    def started(self) -> bool:
        return self._holder is not None

    @property
    def merged(self) -> Path:
        if self._scratch is None:
            raise LocalSandboxError("the sandbox is not started; call start() first")
        return self._scratch / "merged"

    async def start(
        self,
        *,
        binds: list[tuple[str, str, bool]] = (),  # type: ignore[assignment]
        dirs: list[str] = (),  # type: ignore[assignment]
        workdir: str | None = None,
    ) -> None:
        """Create the sandbox; ``binds`` are ``(host source, sandbox target, read_only)``."""
        if shutil.which("unshare") is None or shutil.which("nsenter") is None:
            raise LocalSandboxError(
                "the local sandbox needs the util-linux tools 'unshare' and 'nsenter' on PATH"
            )
        self.workdir = workdir
        self._scratch = Path(tempfile.mkdtemp(prefix=LOCAL_PREFIX))
        # Labelled before anything runs in it, so a sweeper can tell whose it is.
        await asyncio.to_thread(label_local, self._scratch)
        merged = self.merged
        for name in ("upper", "work", "merged"):
            (self._scratch / name).mkdir()
        q = shlex.quote
        lines = [
            f"mount -t overlay overlay -o lowerdir=/,upperdir={q(str(self._scratch / 'upper'))},"
            f"workdir={q(str(self._scratch / 'work'))} {q(str(merged))}",
            *(f"mount --rbind /{d} {q(str(merged / d))}" for d in ("dev", "proc", "sys")),
        ]
        await asyncio.to_thread(_make_dirs, [source for source, _, _ in binds])
        for source, target, read_only in binds:
            dest = merged / target.lstrip("/")
            lines.append(f"mkdir -p {q(str(dest))}")
            options = "--bind -o ro" if read_only else "--bind"
            lines.append(f"mount {options} {q(source)} {q(str(dest))}")
        targets = [*dirs, *([workdir] if workdir else [])]
        lines.extend(f"mkdir -p {q(str(merged / t.lstrip('/')))}" for t in targets)
        script = "; ".join(lines) + f"; echo {_READY.decode()}; exec sleep infinity"
        self._holder = await _spawn_group(
            ["unshare", "-m", "--propagation", "private", "--", "sh", "-ec", script]
        )
        await asyncio.to_thread(label_local, self._scratch, self._holder.pid)
        assert self._holder.stdout is not None
        try:
            async with asyncio.timeout(_START_TIMEOUT_SEC):
                line = await self._holder.stdout.readline()
        except TimeoutError:
            line = b""
        if _READY not in line:
            stderr = b""
            if self._holder.returncode is not None and self._holder.stderr is not None:
                stderr = await self._holder.stderr.read()
            await self.stop()
            raise LocalSandboxError(
                "could not create the mount-namespace sandbox (it needs root or user "
                f"namespaces and overlayfs): {stderr.decode(errors='replace').strip()}"
            )

    async def stop(self) -> None:
        holder, self._holder = self._holder, None
        if holder is not None:
            kill_sandbox_processes(holder.pid)
            await _kill_group(holder)
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            await asyncio.to_thread(shutil.rmtree, scratch, True)

    def inside(self, path: str) -> Path:
        """Host-side path of ``path`` in the sandbox, resolved in the sandbox's mount namespace.

        ``/proc/<pid>/root`` walks the holder's mount namespace, so plain file operations reach
        the overlay and the bind mounts without spawning a process.
        """
        if self._holder is None:
            raise LocalSandboxError("the sandbox is not started; call start() first")
        relative = PurePosixPath(path)
        if not relative.is_absolute():
            relative = PurePosixPath(self.workdir or "/") / relative
        return (
            Path(f"/proc/{self._holder.pid}/root")
            / str(self.merged).lstrip("/")
            / (str(relative).lstrip("/"))
        )

    async def run(
        self,
        argv: list[str],
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: float | None = None,
        input: bytes | None = None,
    ) -> tuple[int, bytes, bytes]:
        """Run ``argv`` chrooted into the sandbox, ``input`` on its stdin (else none); returns
        ``(exit code, stdout, stderr)``."""
        if self._holder is None:
            raise LocalSandboxError("the sandbox is not started; call start() first")
        process_env = {k: os.environ[k] for k in _PASSTHROUGH_ENV if k in os.environ}
        process_env.update(env or {})
        directory = cwd or self.workdir or "/"
        enter = ["nsenter", "-t", str(self._holder.pid), "-m", "--", "chroot", str(self.merged)]
        process = await _spawn_group(
            [*enter, "sh", "-c", 'cd "$0" && exec "$@"', directory, *argv],
            stdin=asyncio.subprocess.DEVNULL if input is None else asyncio.subprocess.PIPE,
            env=process_env,
        )
        try:
            async with asyncio.timeout(timeout_sec):
                stdout, stderr = await process.communicate(input)
        except (TimeoutError, asyncio.CancelledError):
            await _kill_group(process)
            raise
        return (process.returncode if process.returncode is not None else -1, stdout, stderr)


class LocalNamespaceEnvironment(BaseEnvironment):
    """One trial's sandbox (a :class:`NamespaceSandbox`); see the module docs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sandbox = NamespaceSandbox()
        self._image_env: dict[str, str] = {}

    @staticmethod
    def type() -> str:
        return "osmosis-local-ns"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        # mounted: the trial's log directories are bind mounts, so Harbor reads them on the
        # host instead of downloading them.
        return EnvironmentCapabilities(mounted=True)

    def _validate_definition(self) -> None:
        """Nothing to validate up front: :meth:`start` plans the Dockerfile and fails there,
        so Harbor records the reason in the trial result."""

    def _trial_mounts(self) -> list[dict[str, Any]]:
        # Harbor 0.26 keeps the mounts it wants bound on the host in _host_mounts; 0.20 in _mounts.
        mounts = getattr(self, "_host_mounts", None)
        if mounts is None:
            mounts = getattr(self, "_mounts", None) or []
        return [dict(m) for m in mounts if m.get("type", "bind") == "bind"]

    def _task_workdir(self) -> str | None:
        config = getattr(self, "task_env_config", None)
        return getattr(config, "workdir", None) if config is not None else None

    async def start(self, force_build: bool) -> None:
        base_env = {k: os.environ[k] for k in _PASSTHROUGH_ENV if k in os.environ}
        docker_image = getattr(getattr(self, "task_env_config", None), "docker_image", None)
        plan = await asyncio.to_thread(
            plan_image, Path(self.environment_dir), base_env, docker_image
        )
        plan.check()
        self._image_env = dict(plan.env)
        binds = [
            (str(m["source"]), str(m["target"]), bool(m.get("read_only")))
            for m in self._trial_mounts()
        ]
        await self._sandbox.start(
            binds=binds, dirs=list(LOG_DIRS), workdir=self._task_workdir() or plan.workdir
        )
        await _replay(plan, self._sandbox)
        # Harbor >= 0.25 uploads environment/ into the workdir for prebuilt-image tasks.
        upload = getattr(self, "_upload_environment_dir_after_start", None)
        if upload is not None:
            await upload()

    async def stop(self, delete: bool) -> None:
        await self._sandbox.stop()

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        merged = {**self._image_env, **(self._merge_env(env) or {})}
        code, stdout, stderr = await self._sandbox.run(
            ["bash", "-c", command], cwd=cwd, env=merged, timeout_sec=timeout_sec
        )
        return ExecResult(
            stdout=stdout.decode(errors="replace"),
            stderr=stderr.decode(errors="replace"),
            return_code=code,
        )

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        await asyncio.to_thread(_copy_file, Path(source_path), self._sandbox.inside(target_path))

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        await asyncio.to_thread(_copy_tree, Path(source_dir), self._sandbox.inside(target_dir))

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        await asyncio.to_thread(_copy_file, self._sandbox.inside(source_path), Path(target_path))

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        await asyncio.to_thread(_copy_tree, self._sandbox.inside(source_dir), Path(target_dir))


async def _replay(plan: ImagePlan, sandbox: NamespaceSandbox) -> None:
    """Apply the Dockerfile steps the sandbox can honour, in order."""
    for step in plan.steps:
        if step.kind == "workdir":
            await asyncio.to_thread(_make_dirs, [str(sandbox.inside(step.target))])
        elif step.kind in ("copy", "add"):
            await asyncio.to_thread(_copy_sources, step, sandbox.inside(step.target))
        else:
            code, stdout, stderr = await sandbox.run(
                ["sh", "-c", step.command], cwd=step.cwd, env=step.env
            )
            if code != 0:
                output = (stderr or stdout).decode(errors="replace").strip()[-1000:]
                raise LocalSandboxError(
                    f"Dockerfile line {step.line} failed in the local sandbox (exit {code}): "
                    f"{step.text}: {output}"
                )


def _copy_sources(step: Step, target: Path) -> None:
    """``COPY``/``ADD`` semantics: a directory's contents, or files into a directory."""
    into_dir = step.target.endswith("/") or target.is_dir()
    for source in step.sources:
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True, symlinks=True)
        elif step.kind == "add" and is_archive(source):
            target.mkdir(parents=True, exist_ok=True)
            shutil.unpack_archive(source, target)
        else:
            destination = target / source.name if into_dir else target
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)


def _make_dirs(paths: list[str]) -> None:
    for path in paths:
        Path(path).mkdir(parents=True, exist_ok=True)


def _copy_file(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(shutil.SameFileError):
        shutil.copy2(source, target)


def _copy_tree(source: Path, target: Path) -> None:
    # A bind-mounted log directory is the same directory on both sides: nothing to copy.
    with contextlib.suppress(FileNotFoundError):
        if target.exists() and os.path.samefile(source, target):
            return
    shutil.copytree(source, target, dirs_exist_ok=True, symlinks=True)
