"""Compare and sweep: the same work under different variants, side by side."""
