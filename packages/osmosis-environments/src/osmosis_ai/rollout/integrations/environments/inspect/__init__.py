"""Inspect AI tasks as osmosis rollouts: ``inspect:<file.py>@<task>[?ARG=VALUE&...]``.

Installed by ``pip install 'osmosis-ai[inspect]'`` (distribution ``osmosis-environments``).
An Inspect ``Task`` becomes the parts of an osmosis rollout, each run by Inspect itself:

- its dataset's samples become dataset rows (the sample rides along in ``metadata``);
- :class:`InspectWorkflow` runs the task's own solver chain (``generate()``, tools,
  ``basic_agent``/``react``) with an Inspect ``openai-api/osmosis/...`` model pointed at the rollout's
  policy endpoint;
- :class:`InspectGrader` runs the task's scorers: each one is a metric, Inspect's
  ``value_to_float`` maps its value (C/I/P/N -> 1/0/0.5/0), the first scorer is the reward.

Options of the spec are the task's arguments (parsed like ``inspect eval -T``). A task with an
unconfigured ``local``/``docker`` sandbox runs each sample in Harbor's local sandbox (needs
``osmosis-harbor``); a custom image, compose file or other provider is refused by name. See
``docs/guides/inspect.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from osmosis_ai.rollout.integrations.spi import lazy_exports

from ._source import SOURCE, InspectSource  # fails with the pip install hint without inspect-ai

_EXPORTS = {
    "InspectTaskConfig": f"{__name__}._run",
    "InspectWorkflow": f"{__name__}._run",
    "InspectGrader": f"{__name__}._run",
}
__all__ = ["SOURCE", "InspectGrader", "InspectSource", "InspectTaskConfig", "InspectWorkflow"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names as _EXPORTS
    from ._run import InspectGrader as InspectGrader
    from ._run import InspectTaskConfig as InspectTaskConfig
    from ._run import InspectWorkflow as InspectWorkflow
