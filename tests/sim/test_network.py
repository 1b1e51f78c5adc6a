import pytest

from privsim.sim.latency import ConstantLatency
from privsim.sim.network import LinkOverride, LinkSpec, NetworkModel, star_topology


def test_party_override_beats_role_override_beats_default():
    net = NetworkModel(
        LinkSpec(latency=ConstantLatency(value=1.0), bandwidth=10.0, loss=0.1),
        (
            LinkOverride(source="client-3", target="server", latency=ConstantLatency(value=3.0)),
            LinkOverride(
                source="client", target="*", bandwidth=20.0, latency=ConstantLatency(value=2.0)
            ),
        ),
    )
    plain = net.link("client-1", "client", "s", "server")
    special = net.link("client-3", "client", "s", "server")
    other = net.link("s", "server", "client-1", "client")
    assert (plain.latency.mean, plain.bandwidth, plain.loss) == (2.0, 20.0, 0.1)
    assert (special.latency.mean, special.bandwidth, special.loss) == (3.0, 20.0, 0.1)
    assert (other.latency.mean, other.bandwidth) == (1.0, 10.0)


def test_star_topology_edges():
    topo = star_topology("hub", ["hub", "a", "b"])
    assert topo.allows("a", "hub") and topo.allows("hub", "b")
    assert not topo.allows("a", "b")


@pytest.mark.parametrize("kwargs", [{"loss": 1.5}, {"loss": -0.1}, {"bandwidth": 0.0}])
def test_bad_links_are_refused(kwargs):
    with pytest.raises(ValueError):
        LinkSpec(**kwargs)
