"""Measurement scripts run by the benchmarks (`python -m harness._probes.<name>`): not part of the library's API."""
