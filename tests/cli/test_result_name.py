"""The result file of `privsim run` names the scenario, a hash of it and the seed."""

from __future__ import annotations

import re

from privsim.cli import main
from privsim.overrides import scenario_hash
from tests.cli.helpers import scenario_file
from tests.conftest import make_scenario


def test_file_name_holds_a_short_hash_of_the_effective_scenario(tmp_path, capsys):
    path = scenario_file(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 0
    expected = f"test-{scenario_hash(make_scenario())}-seed11.json"
    assert [p.name for p in out.iterdir()] == [expected]
    assert re.fullmatch(r"test-[0-9a-f]{8}-seed11\.json", expected)
    assert f"Result file {out / expected}" in capsys.readouterr().out


def test_an_edited_copy_does_not_overwrite_the_original_result(tmp_path):
    out = tmp_path / "out"
    original = scenario_file(tmp_path)
    edited = scenario_file(tmp_path, "copy.toml", population={"clients": 50, "compute_nodes": 3})
    assert main(["run", str(original), "--out", str(out)]) == 0
    assert main(["run", str(edited), "--out", str(out)]) == 0
    assert main(["run", str(original), "--out", str(out), "--set", "data.mean=0.25"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == 3 and all(
        n.startswith("test-") and n.endswith("-seed11.json") for n in names
    )


def test_the_hash_ignores_the_default_seed_but_not_other_fields():
    base = make_scenario()
    assert scenario_hash(base) == scenario_hash(base.replace({"seed": 99}))
    assert scenario_hash(base) != scenario_hash(base.replace({"privacy.epsilon": 1.5}))
    assert scenario_hash(base) == scenario_hash(make_scenario())  # stable
