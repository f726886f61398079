"""Resource limits, in one place: what the app and the command line refuse up front, naming the bound.

Every module that enforces a bound imports it from here, so an operator can change a limit once.

>>> MAX_UPLOAD_BYTES // 2**20, MAX_CELLS, MAX_SWEEP_RUNS
(50, 4194304, 20000)
"""

import os

MAX_UPLOAD_BYTES = 50 * 2**20  # largest histogram/records file accepted (also .streamlit/config.toml maxUploadSize)
MAX_CELLS = 2**22              # largest histogram domain (4,194,304 cells)
MAX_QUERIES = 2**24            # implicit workloads beyond this many rows (m) are refused
DENSE_LIMIT = 2**25            # entries; dense matrices (test oracle, small explicit workloads) beyond are refused
MAX_SWEEP_RUNS = 20_000        # mechanisms × epsilons × trials of one comparison sweep
MAX_EPSILON = 1000.0           # larger epsilons protect nothing and overflow some mechanisms' arithmetic
MIN_EPSILON = 1e-6             # smaller ones give noise of scale > 1e6 per unit and underflow ε² in error formulas

# Bounded runs (core.analysis.cost): one user action (a release, a sweep, a page's computation) may take at most
# MAX_ACTION_SECONDS (the operator sets DPLENS_MAX_ACTION_SECONDS); runs estimated over WARN_SECONDS are
# announced first, and runs estimated over MAX_RUN_BYTES of memory are refused.
MAX_ACTION_SECONDS = float(os.environ.get("DPLENS_MAX_ACTION_SECONDS", "120"))
# Synthesisers (MST, AIM, identity-pgm through OpenDP) fit graphical models: AIM takes minutes on Adult.
MAX_SYNTHESIS_SECONDS = float(os.environ.get("DPLENS_MAX_SYNTHESIS_SECONDS", "900"))
WARN_SECONDS = 10.0
MAX_RUN_BYTES = 2**30
