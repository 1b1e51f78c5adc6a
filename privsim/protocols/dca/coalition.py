"""What a coalition learns: analyses of the pooled view (:class:`CoalitionView`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from privsim.kit.securesum import threshold as shamir_dca
from privsim.kit.securesum.maths import decode_fixed, reconstruct
from privsim.kit.securesum.messages import SeedShare, Share
from privsim.kit.securesum.seeded import expand
from privsim.sim.coalition import CoalitionView

__all__ = ["reconstructed_dca_inputs"]


def reconstructed_dca_inputs(
    view: CoalitionView,
    nodes: Sequence[str],
    fraction_bits: int,
    *,
    threshold: int | None = None,
) -> dict[str, npt.NDArray[np.float64]]:
    """Clients whose DCA shares the coalition holds for *every* compute node, with the
    value z_i + η_i it reconstructs by adding them (a seed counts as its expansion).
    With fewer than all M shares of a client the coalition holds uniformly random
    vectors and recovers nothing. With Shamir shares (``threshold`` t), any t of a
    client's shares give its input by Lagrange interpolation at zero; fewer give nothing."""
    shares: dict[str, dict[str, npt.NDArray[np.uint64]]] = defaultdict(dict)
    dimension = 0
    for seen in view.messages_of(Share):
        if seen.dst in nodes:
            assert isinstance(seen.message, Share)
            shares[seen.src][seen.dst] = seen.message.values
            dimension = seen.message.values.size
    seeds = [s for s in view.messages_of(SeedShare) if s.dst in nodes]
    for seen in seeds:
        assert isinstance(seen.message, SeedShare)
        # A seed alone has no dimension; the client's correction (to node 0) gives it.
        size = next(iter(shares[seen.src].values())).size if shares[seen.src] else dimension
        shares[seen.src][seen.dst] = expand(seen.message.seed, size)
    out = {}
    for client, by_node in shares.items():
        if threshold is not None:
            if len(by_node) >= threshold:
                by_index = {nodes.index(node): v for node, v in by_node.items()}
                total = shamir_dca.reconstruct_sum(by_index, threshold)
                out[client] = shamir_dca.decode_residues(total, fraction_bits)
        elif len(by_node) == len(nodes):
            out[client] = decode_fixed(reconstruct(np.stack(list(by_node.values()))), fraction_bits)
    return out
