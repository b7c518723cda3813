"""The protocol's benchmark claims as pytest modules shipped with the package.

`pytest -m benchmark --rag-protocol` collects them in any project and measures each claim on the datasets the
project configures (`harness.datasets.*` under `harness.data_dir`), with the model of `--llm`. The library never
imports this package: its modules are tests, run by the plugin (`harness.plugin.protocol`).
"""
