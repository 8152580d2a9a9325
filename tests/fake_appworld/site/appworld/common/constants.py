"""FAKE ``appworld.common.constants`` (tests only)."""

DB_VERSION = "0.1.0"
