"""Protocols written as agent behaviours, with their maths in pure functions."""
