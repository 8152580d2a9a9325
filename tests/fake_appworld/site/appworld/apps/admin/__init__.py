"""FAKE AppWorld admin app (tests only)."""
