"""Built-in benchmarks, one subpackage each. Each registers through the same hook a user's would."""
