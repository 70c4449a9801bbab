"""``try_lock``: an exclusive, non-blocking ``flock`` on a lock file, held through its descriptor;
``is_locked``: whether some process holds it now.

The one place osmosis takes such a lock (an evaluation run's ``.locks/<name>.lock``, a rollout
server's outbox ``lock``). The kernel drops the lock when the descriptor closes or the process
dies (also on ``kill -9``), so a crashed holder never needs manual unlocking.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


def try_lock(path: Path) -> int | None:
    """Open (creating it, mode 0600) and lock ``path``; its descriptor, or ``None`` when another
    descriptor holds the lock. Close the descriptor to release it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def is_locked(path: Path) -> bool:
    """Whether a descriptor holds ``path``'s lock now (``False`` when the file does not exist).

    Probes with a shared lock that it drops at once, so it never blocks and creates nothing;
    a :func:`try_lock` in that instant fails, which is why ``RunLock`` retries briefly (a server
    choosing its outbox folder moves on to the next one, as it always did)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's shared lock
    return False
