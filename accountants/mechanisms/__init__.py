"""One mechanism per module: its Rényi curve and, where it has one, its exact (ε, δ) profile."""
