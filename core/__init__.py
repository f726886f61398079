"""dplens core: histograms, workloads, DP mechanisms, metrics, sweeps. Never imports streamlit."""

__version__ = "0.1.0"
