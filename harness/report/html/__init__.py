"""The self-contained HTML report: the page, its first screen, tables, charts and shared formatting."""
