"""dplens core: histograms, workloads, DP mechanisms, metrics, sweeps. Never imports streamlit."""

from dplens import __version__

__all__ = ["__version__"]
