"""Data loaders: BEIR folders, TREC files and the E2-E4 experiment inputs; errors name file, line and field."""
from harness.data.beir import BeirDataset, load_beir
from harness.data.errors import DataError
from harness.data.experiment import ExperimentInputs, QueryInput, load_experiment_inputs
from harness.data.jsonl import SkipLog
from harness.data.trec import read_qrels, read_trec_qrels, read_trec_run, write_trec_qrels, write_trec_run

__all__ = ["BeirDataset", "DataError", "ExperimentInputs", "QueryInput", "SkipLog", "load_beir",
           "load_experiment_inputs", "read_qrels", "read_trec_qrels", "read_trec_run", "write_trec_qrels",
           "write_trec_run"]
