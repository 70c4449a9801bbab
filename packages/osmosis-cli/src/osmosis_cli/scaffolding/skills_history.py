"""sha256 of every version of a skill file that an osmosis CLI has shipped.

``osmosis skills update`` treats a workspace file whose hash is listed here as unedited (safe
to replace). A workspace written by a manifest-aware CLI is judged by its manifest
(``.agents/skills/.osmosis-skills.json``); this history is for workspaces without one: made by
osmosis-cli 0.1.0 (which wrote copies and no manifest), or whose manifest was deleted. When a
released skill file changes in ``templates/_workspace/skills/``, add the hash of the released
version being replaced (``sha256sum`` of the file before the change).
"""

from __future__ import annotations

#: ``<skill>/<file>`` -> hashes of the versions shipped before the current one.
SHIPPED: dict[str, tuple[str, ...]] = {
    # osmosis-cli 0.1.0 (three skills, copied into .agents/skills and .claude/skills)
    "create-rollouts/SKILL.md": (
        "a2a7d1b1beb044af1210c580d7a64e53cff99a25cb421d16724db99308b8fd25",
    ),
    "debug-rollouts/SKILL.md": (
        "660623b206f84ccd9d63967aff09fda83ff24448e832132b4ccadaa17d5a8974",
    ),
    "evaluate-rollouts/SKILL.md": (
        "b5497c972911626c02f411cf8564bacf5791e147cac7b6177ae2ecd541b250ac",
    ),
}
