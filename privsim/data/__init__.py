"""Data for scenarios: synthetic generators (embedded defaults) and, later, a registry of real data sets."""
