"""Deterministic trajectory checks: what an agent did, judged from its recorded trace.

``model`` holds the trace and test-case types, ``metrics`` the seven metrics as pure functions,
``adapters`` the readers of other formats (OpenAI chat messages, LangChain run trees, Fixtura
``.trace`` files, this plugin's own run records) and ``collect`` the pytest items.
"""
