"""GPU checks: the same answers on CUDA as on the CPU, and their times."""
