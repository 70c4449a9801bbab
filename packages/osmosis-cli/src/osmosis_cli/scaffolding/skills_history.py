"""sha256 of every version of a skill file that an osmosis CLI has shipped.

``osmosis skills update`` treats a workspace file whose hash is listed here as unedited (safe
to replace), which is how a workspace made by an older CLI, without a manifest, is updated
without losing local edits. When a skill file changes in ``templates/_workspace/skills/``, add
the hash of the version being replaced (``sha256sum`` of the file before the change); the test
``test_skills_history.py`` checks that the current version of every file is either listed or
new, and that no entry names a file that never existed.
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
