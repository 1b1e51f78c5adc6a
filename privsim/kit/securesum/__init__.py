"""DCA secure summation (Heikkilä et al., NeurIPS 2017, Algorithm 1) as a sub-protocol:
roles as behaviours, maths, messages, batched delivery and :mod:`.round`, the public
functions a protocol calls to sum through it."""
