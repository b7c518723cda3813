"""The pytest-facing layer: the plugin's hooks (`hooks`, the `pytest11` entry point), options, state, timing
spans, fixtures, runs under negative controls, and the controls themselves (`controls`).

The library (everything else under `harness/`) never imports this package: it is pytest's side of the harness.
"""
