"""Keep the garbage collector off what lives for the whole life of a server or worker process.

By the time a server (or a rollout worker) is ready, its heap holds the imported modules, the
app, the backend and the agent framework: with Strands or OpenAI Agents a million objects or
more. CPython's full collections traverse all of them, and each one stops the event loop for
hundreds of milliseconds: measured, these pauses, not agent code, were the longest waits a
``POST /rollout`` saw. :func:`freeze_long_lived` collects once and then moves every survivor
into the permanent generation (``gc.freeze()``), so later collections traverse only what
rollouts allocate. Done once per process: a frozen object that later becomes cyclic garbage is
not reclaimed, which is harmless for start-up state and would pile up if repeated.
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_long_lived() -> None:
    """Collect, then freeze the survivors (once per process; later calls do nothing)."""
    global _frozen
    if _frozen:
        return
    _frozen = True
    gc.collect()
    gc.freeze()
