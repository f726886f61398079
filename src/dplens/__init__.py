"""dplens: a lab for the privacy–accuracy tradeoffs of differentially private histograms, linear queries and tables.

``dplens.core`` is the pure library (never imports streamlit); ``dplens.ui`` holds the Streamlit views the pages
(``app.py``, ``pages/``) draw; ``dplens.cli`` is the command line (``dplens`` or ``python -m dplens``).
"""

__version__ = "0.1.0"
