"""What model calls cost (pricing) and the run's budget."""
