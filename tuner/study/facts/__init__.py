"""What the launches measured, read from the store: estimates, limits, the plan's arithmetic."""
