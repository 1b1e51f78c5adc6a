"""Metrics, privacy accounting, threat analysis and reports."""
