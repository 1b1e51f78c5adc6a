"""Building blocks below the protocols: the protocol declaration, typed results, a
world built from a scenario, and the DCA secure-sum round other protocols call."""
