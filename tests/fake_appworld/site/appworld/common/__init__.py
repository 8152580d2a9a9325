"""FAKE AppWorld common package (tests only)."""
