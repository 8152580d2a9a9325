"""Audit adapters shipped with the package: ``toy`` (in memory) and ``appworld`` (own interpreter)."""
