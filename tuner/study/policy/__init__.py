"""What runs next, decided as values from a snapshot of the study (no optuna, no store)."""
