"""Issue 16, security: names are safe file names and every write stays inside --out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomli_w

from privsim.cli import main
from privsim.results import UnsafePathError, path_inside, write_json_atomic
from privsim.scenarios import ScenarioError, scenario_from_dict
from privsim.studies.study import StudyError, study_from_dict
from tests.conftest import BASE


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def _hostile_names(tmp_path: Path) -> list[str]:
    return [
        "../../x",
        "../../../x",
        "..",
        "a/../../x",
        "sub/x",
        str(tmp_path / "elsewhere" / "x"),  # absolute
        "/tmp/privsim-absolute-name",
        "a" * 5000,
        "",
        ".hidden",
        "x\n",
        "a\\..\\x",
    ]


@pytest.mark.parametrize("index", range(12))
def test_run_refuses_an_unsafe_scenario_name_and_writes_nothing(tmp_path, capsys, index):
    name = _hostile_names(tmp_path)[index]
    work = tmp_path / "work"
    work.mkdir()
    scenario = work / "s.toml"
    scenario.write_text(tomli_w.dumps({**BASE, "name": name}))
    before = _files(tmp_path)
    assert main(["run", str(scenario), "--out", str(work / "out")]) == 2
    err = capsys.readouterr().err
    assert "scenario field 'name'" in err and "not a safe file name" in err
    assert len(err) < 600  # a 5,000-character name is not echoed back
    assert _files(tmp_path) == before  # nothing written, inside --out or out
    assert not Path("/tmp/privsim-absolute-name-seed11.json").exists()


def test_safe_names_still_run_and_land_in_out(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(tomli_w.dumps({**BASE, "name": "My_scenario-2.v1"}))
    assert main(["run", str(scenario), "--out", str(tmp_path / "out")]) == 0
    written = next((tmp_path / "out").glob("My_scenario-2.v1-*-seed11.json"))
    assert json.loads(written.read_text())["scenario_name"] == "My_scenario-2.v1"
    assert f"Result file {written}" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["../x", "/abs", "a" * 129, "", "a b", 7])
def test_scenario_name_is_validated_on_every_path_in(name):
    with pytest.raises(ScenarioError, match="'name'"):
        scenario_from_dict({**BASE, "name": name})
    if isinstance(name, str):
        with pytest.raises(ScenarioError, match="'name'"):
            scenario_from_dict(BASE).replace({"name": name})


@pytest.mark.parametrize("name", ["../../x", "/abs/x", "a" * 5000, "a/b", ""])
def test_study_name_must_be_a_safe_file_name(name):
    with pytest.raises(StudyError, match="study name") as info:
        study_from_dict({"name": name, "base": dict(BASE)})
    assert len(str(info.value)) < 400


def test_every_write_resolves_inside_the_output_directory(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (out / "link").symlink_to(outside, target_is_directory=True)
    for bad in ("../x.json", str(outside / "x.json"), "link/x.json", "..", "sub/../../x.json"):
        with pytest.raises(UnsafePathError, match=r"outside the output directory|not a file"):
            write_json_atomic(bad, {"a": 1}, within=out)
    assert list(outside.iterdir()) == [] and not (tmp_path / "x.json").exists()
    # a file name, a subdirectory and an absolute path inside are fine
    assert write_json_atomic("x.json", {"a": 1}, within=out) == out / "x.json"
    write_json_atomic("sub/y.json", {"a": 2}, within=out)
    write_json_atomic(str(out / "z.json"), {"a": 3}, within=out)
    assert json.loads((out / "sub" / "y.json").read_text()) == {"a": 2}
    assert path_inside(out, "z.json") == out.resolve() / "z.json"


def test_run_into_an_out_that_is_a_file_is_a_named_error(tmp_path, capsys):
    scenario = tmp_path / "s.toml"
    scenario.write_text(tomli_w.dumps(BASE))
    (tmp_path / "taken").write_text("mine")
    assert main(["run", str(scenario), "--out", str(tmp_path / "taken")]) == 2
    assert "is a file; choose a directory" in capsys.readouterr().err
    assert (tmp_path / "taken").read_text() == "mine"


def test_result_files_get_the_umask_permissions_not_0600(tmp_path):
    """An atomic write goes through a private temporary file; the result is readable as a
    file written with open() would be (0666 less the umask)."""
    import os
    import stat

    from privsim.results import write_json_atomic

    old = os.umask(0o022)
    try:
        path = write_json_atomic("r.json", {"a": 1}, within=tmp_path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
