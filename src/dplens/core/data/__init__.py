"""Loading, checking and transforming histograms: datasets, domains, fingerprints, limits."""
