"""calc: an osmosis rollout."""
