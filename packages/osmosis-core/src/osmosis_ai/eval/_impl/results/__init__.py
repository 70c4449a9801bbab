"""What a run produced: the run model, metrics, training safety, reproducibility."""
