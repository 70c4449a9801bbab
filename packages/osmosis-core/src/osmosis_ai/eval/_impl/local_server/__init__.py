"""The rollout server child process ``eval run`` starts (and its bootstrap file)."""
