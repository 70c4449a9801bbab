"""Keep the garbage collector off what lives for the whole life of a server or worker process.

By the time a server (or a rollout worker) is ready, its heap holds the imported modules, the
app, the backend and the agent framework: with Strands or OpenAI Agents a million objects or
more. CPython's full collections traverse all of them, and each one stops the event loop for
hundreds of milliseconds: measured, these pauses, not agent code, were the longest waits a
``POST /rollout`` saw. :func:`freeze_long_lived` collects once and then moves every survivor
into the permanent generation (``gc.freeze()``), so later collections traverse only what
rollouts allocate. Done once per process: a frozen object that later becomes cyclic garbage is
not reclaimed, which is harmless for start-up state and would pile up if repeated.

The server process also makes its full collections rarer (:func:`space_full_collections`): what
is left for them is the state of the rollouts in flight (30-40 objects each, ~40,000 with 512
in flight), each full collection still stops the loop for 30-50 ms, and they find next to no
garbage there (measured: 0-800 objects freed per collection; cycles die young, in the young
generations, which keep their default thresholds).
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


def freeze_before_fork() -> None:
    """Collect and freeze what exists before forking the worker zygote, so the children's
    collectors never write to these objects' headers and their pages stay shared with the
    parent (copy-on-write). Unlike :func:`freeze_long_lived` it may run before it: both freeze
    only start-up state."""
    gc.collect()
    gc.freeze()


#: A full collection runs at most once per this many collections of the middle generation
#: (CPython's default is 10): about one per 700,000 net allocations instead of 70,000.
FULL_COLLECTION_SPACING = 100


def space_full_collections() -> None:
    """Make the server process's full collections :data:`FULL_COLLECTION_SPACING`/10 times rarer
    (the young generations keep their thresholds)."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_SPACING)
