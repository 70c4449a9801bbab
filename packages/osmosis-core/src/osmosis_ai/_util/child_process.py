"""The orphan rule for every child process osmosis starts: it dies with its parent.

``die_with_parent`` is the ``preexec_fn`` of such a child: ``PR_SET_PDEATHSIG`` (Linux) makes the
kernel SIGTERM the child when the process that started it dies, ``kill -9`` included, and the
child gets its own process group so that stopping it can reach its own children too.

``PR_SET_PDEATHSIG`` fires when the *thread* that forked the child exits, so spawn from a thread
that lives as long as the child (the event loop's thread), never from a worker thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """preexec hook: SIGTERM this child when its parent dies (Linux only; harmless elsewhere),
    in a process group of its own."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    os.setpgid(0, 0)
