"""FAKE AppWorld apps package (tests only)."""
