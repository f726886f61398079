"""The source papers: reproductions with verdicts, literal (non-private) readings, audits, teaching."""
