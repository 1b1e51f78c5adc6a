"""Empirical privacy audits: run a protocol from the adversary's view on neighbouring
inputs, test, and bound ε from below with stated confidence (Jagielski et al. 2020;
Nasr et al. 2021). Protocols describe their audit with :mod:`privsim.kit.audit`."""

from privsim.audit.bounds import clopper_pearson, epsilon_lower_bound
from privsim.audit.harness import AuditResult, audit, audit_plan, plan_of

__all__ = [
    "AuditResult",
    "audit",
    "audit_plan",
    "clopper_pearson",
    "epsilon_lower_bound",
    "plan_of",
]
