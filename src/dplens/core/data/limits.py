"""Resource limits, in one place: what the app and the command line refuse up front, naming the bound.

Every module that enforces a bound imports it from here, so an operator can change a limit once.

>>> MAX_UPLOAD_BYTES // 2**20, MAX_CELLS, MAX_SWEEP_RUNS
(50, 4194304, 20000)
"""

import os

MAX_UPLOAD_BYTES = 50 * 2**20  # largest histogram/records file accepted (also .streamlit/config.toml maxUploadSize)
MAX_CELLS = 2**22              # largest histogram domain (4,194,304 cells)
MAX_LEVELS = 2**16             # largest domain of one table attribute (larger ones are refused as bad input)
MAX_QUERIES = 2**24            # implicit workloads beyond this many rows (m) are refused
DENSE_LIMIT = 2**25            # entries; dense matrices (test oracle, small explicit workloads) beyond are refused
MAX_SWEEP_RUNS = 20_000        # mechanisms × epsilons × trials of one comparison sweep
MAX_RECIPE_NUMBERS = 30_000    # numbers in a custom-workload recipe of a session config (shown on the page)
MAX_EPSILON = 1000.0           # larger epsilons protect nothing and overflow some mechanisms' arithmetic
MIN_EPSILON = 1e-6             # smaller ones give noise of scale > 1e6 per unit and underflow ε² in error formulas

# Uploads other than histograms, each checked from its header or metadata before anything is allocated.
MAX_GRID_ROWS = 2**21          # rows of a grid file (.parquet) on the Grids page: ~400 MB as a data frame
MAX_GRID_COLUMNS = 64          # columns of a grid file (the grid schema has 13)
MAX_GRID_BYTES = 2**28         # decoded bytes of a grid file's column data (compressed files can expand 1000-fold)
MAX_TABLE_RECORDS = 10_000_000  # records of a table, after expanding a pre-aggregated one (its count column)
MAX_TABLE_ENTRIES = 2**24      # records × attributes of an expanded pre-aggregated table (int64: 128 MB)
# A pre-aggregated table's implied domain (the product of its columns' sizes) is bounded by MAX_CELLS; a domain
# file's bins per column by MAX_LEVELS; an uploaded query matrix's rows × columns
# by DENSE_LIMIT; every uploaded file (query files of `file:` workloads too) by MAX_UPLOAD_BYTES.

# Bounded runs (dplens.core.analysis.cost): one user action (a release, a sweep, a page's computation) may take at most
# MAX_ACTION_SECONDS (the operator sets DPLENS_MAX_ACTION_SECONDS); runs estimated over WARN_SECONDS are
# announced first, and runs estimated over MAX_RUN_BYTES of memory are refused.
MAX_ACTION_SECONDS = float(os.environ.get("DPLENS_MAX_ACTION_SECONDS", "120"))
# Synthesisers (MST, AIM, identity-pgm through OpenDP) fit graphical models: AIM takes minutes on Adult.
MAX_SYNTHESIS_SECONDS = float(os.environ.get("DPLENS_MAX_SYNTHESIS_SECONDS", "900"))
WARN_SECONDS = 10.0
MAX_RUN_BYTES = 2**30

# The store keeps each curator's uploads and workspaces: at most this many bytes per curator (the operator sets
# DPLENS_MAX_STORE_MB); past it nothing more is stored, and the message names the quota.
MAX_STORE_BYTES = int(float(os.environ.get("DPLENS_MAX_STORE_MB", "512")) * 2**20)
