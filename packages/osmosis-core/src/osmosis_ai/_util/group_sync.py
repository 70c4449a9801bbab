"""``GroupSync``: the background group commit of an append-only file (a thread that syncs it).

The one place osmosis runs such a thread (the evaluation journal ``events.jsonl``, the rollout
server's outbox). The owner writes, then calls :meth:`GroupSync.wake`, which never waits for the
disk; a daemon thread then calls the owner's ``sync`` (an ``fdatasync``, and whatever else the
owner does with it) at most once per :data:`SYNC_INTERVAL_SEC`, so everything written in that
window shares one sync. An idle owner costs nothing: the thread only runs after a wake.

Semantics:

* the thread starts at the first :meth:`~GroupSync.wake` (or :meth:`~GroupSync.start`) and
  clears the wake *before* each sync, so a write made while a sync runs is covered by the next;
* :meth:`~GroupSync.stop` ends the thread (without waiting out the interval), then calls
  ``sync`` once more on the caller's thread, so what was written before ``stop`` is synced when
  it returns, and the owner may close its file right after. An exception of that last call
  propagates to the caller. A wake after ``stop`` does nothing;
* on the thread, an exception escaping ``sync`` is logged (with its traceback) and the thread
  keeps going: the next wake calls ``sync`` again. Owners catch the errors they report
  themselves (an ``OSError`` of the disk) inside ``sync``;
* not fork-aware: a forked child does not inherit the thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

#: At most one background sync per this many seconds (the group-commit window).
SYNC_INTERVAL_SEC = 0.05


class GroupSync:
    """Calls ``sync`` on a daemon thread named ``name`` after :meth:`wake`, at most once per
    ``interval`` seconds; :meth:`stop` ends the thread and syncs once more."""

    def __init__(
        self, sync: Callable[[], None], *, name: str, interval: float = SYNC_INTERVAL_SEC
    ) -> None:
        self._sync = sync
        self._name = name
        self._interval = interval
        self._wake = threading.Event()  # woken since the thread last cleared it
        self._stop = threading.Event()
        self._start_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread now (:meth:`wake` starts it otherwise); a no-op once started or
        stopped."""
        with self._start_lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()

    def wake(self) -> None:
        """Something was written: sync it within the interval (never waits for the disk)."""
        if self._thread is None:
            self.start()
        # Already set: the thread clears it before its next sync, which covers this write.
        if not self._wake.is_set():
            self._wake.set()

    def stop(self) -> None:
        """End the thread, then call ``sync`` on this thread (its exception propagates)."""
        self._stop.set()
        self._wake.set()
        with self._start_lock:
            thread = self._thread
        if thread is not None:
            thread.join()  # it must not sync while the owner closes its file
        self._sync()

    def _run(self) -> None:
        last = float("-inf")
        while True:
            self._wake.wait()
            # Group commit: at most one sync per window, whatever arrives meanwhile shares it.
            self._stop.wait(last + self._interval - time.monotonic())
            if self._stop.is_set():
                return  # stop() syncs what is left, after this thread has ended
            self._wake.clear()  # before the sync: a write after this wakes it again
            last = time.monotonic()
            try:
                self._sync()
            except Exception:
                logger.exception(
                    "background sync of %s failed; retried at the next wake", self._name
                )
