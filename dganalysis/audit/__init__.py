"""Audit of domain-generalization results: sweep index, sweep analyses, claims and verdicts."""
