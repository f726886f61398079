"""Workloads of linear queries as implicit operators, and marginal workloads on tables."""
