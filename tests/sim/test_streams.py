import numpy as np
import pytest

from privsim.sim.streams import Streams


def test_named_streams_do_not_depend_on_request_order():
    a, b = Streams(5), Streams(5)
    x1 = a.generator("agent", "client-1", "noise").random(4)
    a.generator("agent", "client-0", "noise").random(4)
    b.generator("agent", "client-0", "noise").random(4)
    b.generator("extra", "consumer").random(100)  # a new consumer shifts nothing
    x2 = b.generator("agent", "client-1", "noise").random(4)
    np.testing.assert_array_equal(x1, x2)


def test_different_names_and_seeds_give_different_draws():
    s = Streams(5)
    assert not np.array_equal(s.fresh("a").random(4), s.fresh("b").random(4))
    assert not np.array_equal(Streams(5).fresh("a").random(4), Streams(6).fresh("a").random(4))


def test_fresh_restarts_and_generator_is_cached():
    s = Streams(1)
    g = s.generator("x")
    first = g.random()
    assert s.generator("x") is g
    assert s.fresh("x").random() == first


def test_bad_seed_is_refused():
    with pytest.raises(ValueError, match="seed"):
        Streams(-1)
