"""Distributed Compute Algorithm (Heikkilä et al., NeurIPS 2017, Algorithm 1)."""
