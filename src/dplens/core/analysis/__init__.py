"""Measuring mechanisms: errors, sweeps and their execution, grids, selection of ε, intervals, run bounds."""
