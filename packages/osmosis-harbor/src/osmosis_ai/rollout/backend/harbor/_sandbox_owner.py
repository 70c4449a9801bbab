"""Who owns a sandbox, and removing the sandboxes of owners that died (orphans).

The owner of a sandbox is the process that created it, identified by a short random token,
its pid and its start time (so a reused pid is not mistaken for it). Labels:

- a local sandbox's scratch directory (``<tmp>/osmosis-localns-*``) holds ``owner.json`` with
  the owner and the pid and start time of its holder process;
- a SkyPilot sandbox is named ``osmo-<token>-<trial>``; the token is resolved to its process
  through the owner registry ``$OSMOSIS_HOME/sandboxes/<token>.json``, written on the first
  creation. A token with no record here (another machine, another home) is never swept.

:func:`sweep_orphans` removes every sandbox whose owner is dead; the backend runs it once per
process before its first trial, and it can be called directly (``await sweep_orphans()``).
Docker containers are not swept (Harbor names them after the trial, without an owner).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from osmosis_ai.rollout.integrations.spi import write_atomic

logger = logging.getLogger(__name__)

LOCAL_PREFIX: Final = "osmosis-localns-"
SKYPILOT_PREFIX: Final = "osmo-"
OWNER_FILE: Final = "owner.json"
_MAX_NAME: Final = 53  # SkyPilot sandbox names are DNS labels of at most 53 characters


def process_start(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot, or ``None`` if it is not running."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return None if fields[0] in ("Z", "X") else int(fields[19])


def is_alive(pid: int, start: int | None) -> bool:
    """``pid`` is running and is the same process (same start time) as when it was recorded."""
    current = process_start(pid)
    return current is not None and (start is None or current == start)


@dataclass(frozen=True, slots=True)
class Owner:
    token: str
    pid: int
    start: int | None
    host: str
    created_at: float

    def alive(self) -> bool:
        return self.host == socket.gethostname() and is_alive(self.pid, self.start)


_OWNER: list[Owner] = []


def current_owner() -> Owner:
    """This process as an owner (a forked child, such as a server worker, is its own owner)."""
    pid = os.getpid()
    if not _OWNER or _OWNER[0].pid != pid:
        now = time.time()
        _OWNER[:] = [
            Owner(secrets.token_hex(5), pid, process_start(pid), socket.gethostname(), now)
        ]
    return _OWNER[0]


def _registry() -> Path:
    from osmosis_ai.rollout.integrations.spi import osmosis_cache_dir

    return osmosis_cache_dir().parent / "sandboxes"


def register_owner() -> Owner:
    """Record this process in the owner registry (once) and return it."""
    owner = current_owner()
    record = _registry() / f"{owner.token}.json"
    if not record.exists():
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps(asdict(owner)))
    return owner


def registered_owner(token: str) -> Owner | None:
    try:
        return Owner(**json.loads((_registry() / f"{token}.json").read_text()))
    except (OSError, ValueError, TypeError):
        return None


def sandbox_name(session_id: str) -> str:
    """``osmo-<owner token>-<session>`` as a DNS label of at most 53 characters."""
    token = register_owner().token
    slug = re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]+", "-", session_id.lower())).strip("-")
    name = f"{SKYPILOT_PREFIX}{token}-{slug}"
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(session_id.encode()).hexdigest()[:8]
    return f"{name[: _MAX_NAME - len(digest) - 1].rstrip('-')}-{digest}"


def token_of(name: str) -> str | None:
    if not name.startswith(SKYPILOT_PREFIX):
        return None
    return name[len(SKYPILOT_PREFIX) :].split("-", 1)[0] or None


# --- local sandboxes ------------------------------------------------------------------------


def label_local(scratch: Path, holder_pid: int | None = None) -> None:
    """Write ``owner.json`` into a local sandbox's scratch directory."""
    owner = current_owner()
    label = {**asdict(owner), "holder_pid": holder_pid}
    if holder_pid is not None:
        label["holder_start"] = process_start(holder_pid)
    write_atomic(scratch / OWNER_FILE, json.dumps(label))


def local_sandboxes(root: Path | None = None) -> list[Path]:
    """Every local sandbox scratch directory under ``root`` (default: the temp dir)."""
    base = Path(root or tempfile.gettempdir())
    return sorted(p for p in base.glob(f"{LOCAL_PREFIX}*") if p.is_dir())


def sweep_local(root: Path | None = None) -> list[Path]:
    """Remove local sandboxes whose owner is dead (blocking); returns the removed dirs.

    A directory without a readable ``owner.json`` is being created (or is not ours): kept.
    """
    removed = []
    for scratch in local_sandboxes(root):
        try:
            label = json.loads((scratch / OWNER_FILE).read_text())
            owner_alive = is_alive(int(label["pid"]), label.get("start"))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if owner_alive:
            continue
        holder = label.get("holder_pid")
        if holder is not None and is_alive(int(holder), label.get("holder_start")):
            kill_sandbox_processes(int(holder))
        shutil.rmtree(scratch, ignore_errors=True)
        removed.append(scratch)
    return removed


def kill_sandbox_processes(holder_pid: int) -> None:
    """Kill a local sandbox's holder and every process left in its mount namespace."""
    try:
        namespace = os.readlink(f"/proc/{holder_pid}/ns/mnt")
    except OSError:
        namespace = None
    if namespace is not None:
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == holder_pid:
                continue
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{entry}/ns/mnt") == namespace:
                    os.kill(int(entry), signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.kill(holder_pid, signal.SIGKILL)


# --- SkyPilot sandboxes ---------------------------------------------------------------------


async def sweep_skypilot(sdk: Any | None = None) -> list[str]:
    """Terminate SkyPilot sandboxes named ``osmo-<token>-...`` whose owner is dead.

    Uses the Platform SDK's ``sky.sandbox.list`` (handles with ``name`` and ``terminate``).
    Returns the names terminated; an SDK without ``list`` is logged and skipped.
    """
    if sdk is None:
        try:
            from sky import sandbox as sdk  # type: ignore[import-not-found, no-redef]
        except Exception:  # the Platform SDK is not installed: nothing to sweep
            return []
    lister = getattr(sdk, "list", None)
    if lister is None:
        logger.warning("sky.sandbox has no list(): orphaned SkyPilot sandboxes are not swept")
        return []
    terminated: list[str] = []
    kept: set[str | None] = set()
    for handle in await lister.aio():
        name = str(getattr(handle, "name", ""))
        token = token_of(name)
        owner = registered_owner(token) if token else None
        if owner is None or owner.alive():
            kept.add(token)
            continue
        try:
            await handle.terminate.aio(wait=True)
        except Exception as exc:
            logger.warning("could not terminate orphaned SkyPilot sandbox %s: %s", name, exc)
            kept.add(token)
            continue
        terminated.append(name)
    _forget_dead_owners(kept)
    return terminated


def _forget_dead_owners(in_use: set[str | None]) -> None:
    """Delete registry records of dead owners that no longer own a sandbox."""
    for record in _registry().glob("*.json"):
        owner = registered_owner(record.stem)
        if owner is not None and record.stem not in in_use and not owner.alive():
            record.unlink(missing_ok=True)


async def sweep_orphans(environment: str | None = None) -> dict[str, list[str]]:
    """Remove the sandboxes of dead owners; ``environment`` = ``local`` | ``skypilot`` | all.

    Returns what was removed, per environment. Failures are logged, never raised.
    """
    import asyncio

    swept: dict[str, list[str]] = {}
    if environment in (None, "local"):
        try:
            swept["local"] = [str(p) for p in await asyncio.to_thread(sweep_local)]
        except OSError as exc:
            logger.warning("could not sweep orphaned local sandboxes: %s", exc)
    if environment in (None, "skypilot"):
        try:
            swept["skypilot"] = await sweep_skypilot()
        except Exception as exc:
            logger.warning("could not sweep orphaned SkyPilot sandboxes: %s", exc)
    for kind, names in swept.items():
        if names:
            logger.info("removed %d orphaned %s sandbox(es): %s", len(names), kind, names)
    return swept
