"""The navigation: (section, page script, title, material icon). app.py and the tests read this list."""

PAGES: list[tuple[str, str, str, str]] = [
    ("Explore", "pages/data.py", "Data", ":material/bar_chart:"),
    ("Explore", "pages/workloads.py", "Workloads", ":material/functions:"),
    ("Explore", "pages/compare.py", "Compare", ":material/compare_arrows:"),
    ("Explore", "pages/grid.py", "Grids", ":material/grid_view:"),
    ("Explore", "pages/tables.py", "Tables", ":material/table_chart:"),
    ("Decide", "pages/choose_epsilon.py", "Choose epsilon", ":material/tune:"),
    ("Decide", "pages/gradual.py", "Gradual release", ":material/stairs:"),
    ("Publish", "pages/release.py", "Release", ":material/publish:"),
    ("Publish", "pages/ledger.py", "Ledger", ":material/receipt_long:"),
    ("Learn", "pages/learn.py", "Learn", ":material/school:"),
    ("Learn", "pages/papers.py", "Papers", ":material/menu_book:"),
]
