"""SecAgg (Bonawitz et al., CCS 2017) and SecAgg+ (Bell et al., CCS 2020) as a secure-sum
round other protocols call: roles as behaviours, messages, maths, cryptography, the
bulk key book and its worker pool, Shamir sharing, the communication graph, the trust
assumption, and :mod:`.round`, the public functions a protocol calls to sum through it.

Kept free of imports (as :mod:`privsim.kit.securesum`'s): the engine's workers import
:mod:`.bulk` without loading the round machinery (:func:`privsim.sim.workers.alone`)."""
