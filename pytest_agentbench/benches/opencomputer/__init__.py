"""OpenComputer (echo0715/OpenComputer): task files as items, graded by OpenComputer's own verifier
scripts inside a sandbox, with partial credit.

Modules: ``tasks`` (task files), ``environment`` (start and end states in a sandbox), ``checks``
(running verifiers, the criteria), ``results`` (the reference's result files and reward),
``desktop`` (an agent on the app), ``bench`` (the Benchmark), ``options`` (the options; light, read
at pytest start-up). Kept import-light: nothing is imported here.
"""
