"""Verifier audit: does a benchmark's checker accept runs whose end state is wrong?

Each task's own correct solution is edited by one mutation operator, replayed from a fresh start,
read back, and only then graded by the benchmark's unmodified checker. A pass whose end state
differs from the unedited run's is a false accept. Usable without pytest (:func:`audit`); the
pytest plugin turns each task x operator into an item.
"""

from pytest_agentbench.audit.engine import AuditResult, TaskResult, audit, audit_task
from pytest_agentbench.audit.model import DEFAULT_POLICY, CallPolicy, Delivery, Edit, Reference, Run, RunResult
from pytest_agentbench.audit.operators import OPERATOR_CLASS, OPERATORS, apply_operator

__all__ = [
    "DEFAULT_POLICY", "OPERATORS", "OPERATOR_CLASS", "AuditResult", "CallPolicy", "Delivery", "Edit",
    "Reference", "Run", "RunResult", "TaskResult", "apply_operator", "audit", "audit_task",
]
