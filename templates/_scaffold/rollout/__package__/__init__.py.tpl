"""{{name}}: an osmosis rollout."""
