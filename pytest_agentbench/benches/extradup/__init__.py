"""ExtraDup: does a reward pay for wrong writes?

Five wrong writes to a MockMed encounter (a duplicate record, an extra field, a missing note, a form
never submitted, a "saved" banner with nothing saved), the correct write (control) and an oracle
outage, each applied to a fresh MockMed SQLite store through the store the app uses. Every reward x
condition x trial is an item ``bench/extradup::<reward>::<condition>::trial<k>``::

    pytest --bench=extradup
    pytest --bench=extradup --bench-reward mypkg.rewards:my_reward

A reward is a plain callable ``reward(evidence) -> bool | float | None`` (see ``cells.Evidence``).

The plugin layer registers the benchmark and builds its suite provider (``plugin/suites.py``, the
pytest side: items, reports, the summary table); this package holds the pytest-free parts (the
conditions, the rewards, the evidence) and imports nothing at startup.
"""
