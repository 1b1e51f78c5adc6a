from privsim.testing import parametrize_with_checks


@parametrize_with_checks("two_server_mean")
def test_privsim_contract(protocol, check):
    check(protocol)
