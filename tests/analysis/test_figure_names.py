"""Figure file names come from grid values: they stay inside the report folder and short."""

from privsim.analysis.figures import _file_name


def test_grid_values_cannot_leave_the_report_folder_or_grow_without_bound():
    assert (
        _file_name("accuracy_rmse_vs_privacy.epsilon_0.5") == "accuracy_rmse_vs_privacy_epsilon_0_5"
    )
    assert "/" not in _file_name("../../etc/passwd") and ".." not in _file_name("../../x")
    long = _file_name("x" * 5000)
    assert len(long) == 120 and long != _file_name("x" * 4999)  # distinct values, distinct names
    assert _file_name("") == "figure"
