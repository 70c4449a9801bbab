"""A Docker-free Harbor environment for tests: a Linux mount namespace over a copy-on-write
overlay of the host's root filesystem.

**For testing only.** It exists so that real Harbor trials (``TrialQueue`` → ``Trial`` → agent →
``Verifier``) run on machines without Docker, such as CI runners, in about 20 ms per
environment. It is not a security boundary:

- the "image" is the host's own userland; the task's ``Dockerfile`` and ``docker_image`` are
  ignored (whatever the host has installed is what the sandbox has);
- there is no network namespace: sandboxed code shares the host's network, which is also why it
  can reach a policy server on ``127.0.0.1`` directly (no ``host.docker.internal`` rewriting);
- there are no cgroup limits and the ``user`` of an ``exec`` is ignored (everything runs as the
  calling user, normally root);
- only the root filesystem is overlaid; other host mounts (except ``/dev``, ``/proc`` and
  ``/sys``, which are bound in) are not visible. ``/tmp`` is the host's, copy-on-write like the
  rest: the interpreter running the sandboxed Python (and an editable checkout) may live there,
  as in CI clones and nox venvs under ``/tmp``.

Writes inside the sandbox land in a per-trial upper directory that is deleted by :meth:`stop`, so
the host is left untouched. It needs root (or unprivileged user namespaces), ``unshare``,
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

LOCAL_ENVIRONMENT_IMPORT_PATH = (
    "osmosis_ai.rollout.backend.harbor.local_environment:LocalNamespaceEnvironment"
)

# Inherited from the host so that the host's interpreters and tools resolve inside the sandbox.
_PASSTHROUGH_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "PYENV_ROOT", "UV_CACHE_DIR", "TERM")
_READY = b"OSMOSIS-SANDBOX-READY"
_START_TIMEOUT_SEC = 30.0


class LocalSandboxError(RuntimeError):
    """The namespace sandbox could not be created or used (see the message for the cause)."""


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
        self._scratch = Path(tempfile.mkdtemp(prefix="osmosis-localns-"))
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
        self._holder = await asyncio.create_subprocess_exec(
            "unshare",
            "-m",
            "--propagation",
            "private",
            "--",
            "sh",
            "-ec",
            script,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
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
            _kill_namespace_members(holder.pid)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(holder.pid, signal.SIGKILL)
            await holder.wait()
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
    ) -> tuple[int, bytes, bytes]:
        """Run ``argv`` chrooted into the sandbox; returns ``(exit code, stdout, stderr)``."""
        if self._holder is None:
            raise LocalSandboxError("the sandbox is not started; call start() first")
        process_env = {k: os.environ[k] for k in _PASSTHROUGH_ENV if k in os.environ}
        process_env.update(env or {})
        directory = cwd or self.workdir or "/"
        process = await asyncio.create_subprocess_exec(
            "nsenter",
            "-t",
            str(self._holder.pid),
            "-m",
            "--",
            "chroot",
            str(self.merged),
            "sh",
            "-c",
            'cd "$0" && exec "$@"',
            directory,
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=process_env,
            start_new_session=True,
        )
        try:
            async with asyncio.timeout(timeout_sec):
                stdout, stderr = await process.communicate()
        except (TimeoutError, asyncio.CancelledError):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            raise
        return (process.returncode if process.returncode is not None else -1, stdout, stderr)


class LocalNamespaceEnvironment(BaseEnvironment):
    """One trial's sandbox (a :class:`NamespaceSandbox`); see the module docs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sandbox = NamespaceSandbox()

    @staticmethod
    def type() -> str:
        return "osmosis-local-ns"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        # mounted: the trial's log directories are bind mounts, so Harbor reads them on the
        # host instead of downloading them.
        return EnvironmentCapabilities(mounted=True)

    def _validate_definition(self) -> None:
        """Nothing to validate: the Dockerfile is deliberately ignored (see module docs)."""

    def _trial_mounts(self) -> list[dict[str, Any]]:
        # Harbor 0.26 keeps the mounts it wants bound on the host in _host_mounts; 0.20 in _mounts.
        mounts = getattr(self, "_host_mounts", None)
        if mounts is None:
            mounts = getattr(self, "_mounts", None) or []
        return [dict(m) for m in mounts if m.get("type", "bind") == "bind"]

    def _workdir(self) -> str | None:
        config = getattr(self, "task_env_config", None)
        return getattr(config, "workdir", None) if config is not None else None

    async def start(self, force_build: bool) -> None:
        binds = [
            (str(m["source"]), str(m["target"]), bool(m.get("read_only")))
            for m in self._trial_mounts()
        ]
        await self._sandbox.start(
            binds=binds,
            dirs=["/logs/agent", "/logs/verifier", "/logs/artifacts"],
            workdir=self._workdir(),
        )

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
        code, stdout, stderr = await self._sandbox.run(
            ["bash", "-c", command], cwd=cwd, env=self._merge_env(env), timeout_sec=timeout_sec
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


def _kill_namespace_members(holder_pid: int) -> None:
    """Kill every process left in the holder's mount namespace (background jobs of ``exec``)."""
    try:
        namespace = os.readlink(f"/proc/{holder_pid}/ns/mnt")
    except OSError:
        return
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == holder_pid:
            continue
        try:
            if os.readlink(f"/proc/{entry}/ns/mnt") == namespace:
                os.kill(int(entry), signal.SIGKILL)
        except OSError:
            continue
