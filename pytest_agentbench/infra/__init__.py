"""Machines for live benchmarks: pools of hosts leased one per xdist worker."""
