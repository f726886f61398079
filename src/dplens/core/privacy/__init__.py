"""Privacy definitions, budgets and their persistent ledger, and the noise samplers."""
