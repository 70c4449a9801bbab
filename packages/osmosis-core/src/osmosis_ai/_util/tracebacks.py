"""Tracebacks that start where the user's code does (standard library only: the entrypoint
loader and the Harbor sandbox's engine import it)."""

from __future__ import annotations

import traceback
from collections.abc import Callable


def traceback_from(exc: BaseException, starts_here: Callable[[str], bool]) -> str:
    """``exc``'s formatted traceback from its first frame whose file ``starts_here`` accepts.

    The frames above it (a loader, importlib, the engine that called a workflow) say nothing
    about the failure, as pytest hides its own. All of it when no frame qualifies. Chained
    causes are kept whole.
    """
    tb = exc.__traceback__
    while tb is not None and not starts_here(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))
