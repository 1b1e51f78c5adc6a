"""Tests of the fedlearn protocol's models and federated data."""
