"""The run record: the run folder, its JSON records, and the views rendered from them."""
