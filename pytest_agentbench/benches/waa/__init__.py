"""Windows Agent Arena (WAA): the live client, the upstream scoring rule and (elsewhere) the benchmark.

Kept import-light: the HTTP client (``client``) and the scoring rule (``scoring``) are imported from
their modules, not here.
"""
