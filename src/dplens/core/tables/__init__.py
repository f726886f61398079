"""Tables of records: loading, marginal mechanisms (ResidualPlanner, MST, AIM, ...), comparisons."""
