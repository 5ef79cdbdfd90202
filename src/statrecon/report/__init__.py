"""Results -> text, JSON, plots."""
