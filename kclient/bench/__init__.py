"""Microbenchmarks (run as modules, e.g. ``python -m kclient.bench.records``)."""
