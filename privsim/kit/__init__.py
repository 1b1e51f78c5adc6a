"""Building blocks below the protocols: the protocol declaration, typed results, a
world built from a scenario, and the secure-sum rounds other protocols call: DCA's
(:mod:`privsim.kit.securesum`) and SecAgg / SecAgg+'s (:mod:`privsim.kit.secagg`)."""
