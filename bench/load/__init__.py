"""The server over time and under pressure: slow and stalled clients, soak, /ping under load."""
