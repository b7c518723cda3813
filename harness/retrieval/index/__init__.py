"""The LanceDB store (vectors and full text), streaming ingestion, ANN search and Ray ingestion."""
