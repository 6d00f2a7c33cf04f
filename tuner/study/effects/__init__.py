"""The model of what each setting did: pure numbers, no optuna, no store."""
