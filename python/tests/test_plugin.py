"""The pytest plugin, run through pytester: marked tests skip without --larc and run larc's cases with
readable ids with it; a failing kernel's case fails with the figures, is shrunk, is saved under
--larc-save and replays with --larc-replay, the shrunk case alone by its rerun command; a rerun command
runs as printed however the plugin was loaded; JUnit properties and --larc-json carry each case's seed,
verdict, worst ratio and reproduce command; README.md's quick start runs as written."""
import json
import pathlib
import re
import shlex
import xml.etree.ElementTree as ET

import pytest

pytest_plugins = ["pytester"]

TEST_FILE = '''
import pytest
from numpy_gdn import kernel

@pytest.mark.larc("gdn", dtypes=["fp32"], shapes=[(1, 100, 2, 16, 16)], limits={"min_K": 8})
def test_honest(larc_case):
    larc_case.gate(kernel())

@pytest.mark.larc("gdn", dtypes=["fp32"], shapes=[(1, 100, 2, 16, 16)])
def test_dropped_carry(larc_case):
    larc_case.gate(kernel("dropped_carry"))
'''


@pytest.fixture
def project(pytester):
    pytester.makepyfile(numpy_gdn=(pathlib.Path(__file__).parent / "numpy_gdn.py").read_text(), test_kernels=TEST_FILE)
    return pytester


def run(project, *args):
    return project.runpytest_subprocess("-p", "larc.pytest_plugin", "-p", "no:cacheprovider", *args)


def test_marked_tests_skip_without_larc(project):
    result = run(project, "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*larc cases run with --larc*"])


def test_ids_name_dtype_shape_seed_and_random_cases(project):
    result = run(project, "--larc", "--larc-seed", "3", "--larc-random", "2", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*test_honest?fp32-1x100x2x16x16-s3?", "*test_honest?random0-fp32-*",
                                 "*test_honest?random1-fp32-*"])


def test_larc_runs_cases_saves_failures_and_reports_them(project):
    saved = project.path / "failures"
    result = run(project, "--larc", f"--larc-save={saved}", "--junitxml=junit.xml", "--larc-json=larc.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*GateFailure*", "*o * FAIL at fp32*", "*first: timestep 64: error*",
                                 "*worst timesteps*", "*saved:*failures*", "*reproduce:   larc diff *",
                                 "*rerun:       pytest *test_dropped_carry?fp32-1x100x2x16x16-s1?? --larc*",
                                 "*larc: 2 verdicts, 1 failed*"])
    # The failure and the case it shrank to, each a fixture and a candidate.
    fixtures = sorted(saved.glob("*.safetensors"))
    assert len(fixtures) == 4 and sum(f.name.endswith(".candidate.safetensors") for f in fixtures) == 2

    props = {tc.get("name"): {p.get("name"): p.get("value") for p in tc.iter("property")}
             for tc in ET.parse(project.path / "junit.xml").getroot().iter("testcase")}
    failed = props["test_dropped_carry[fp32-1x100x2x16x16-s1]"]
    assert failed["larc.seed"] == "1" and failed["larc.verdict"] == "fail" and float(failed["larc.worst_ratio"]) > 1
    assert failed["larc.reproduce"].startswith("pytest ") and failed["larc.judge"].startswith("larc diff ")
    assert failed["larc.fixture"].startswith(str(saved))
    assert failed["larc.shrunk"] == "1,65,1,1,1" and failed["larc.shrunk_fixture"].startswith(str(saved))
    assert failed["larc.shrunk_reproduce"].startswith("pytest ")
    assert props["test_honest[fp32-1x100x2x16x16-s1]"]["larc.verdict"] == "pass"

    report = json.loads((project.path / "larc.json").read_text())
    assert [r["pass"] for r in report["results"]] == [True, False]
    assert report["results"][1]["outputs"][0]["worst_timesteps"]

    replay = run(project, "--larc", f"--larc-replay={saved}", "-k", "test_dropped_carry", f"--larc-save={project.path / 'again'}")
    replay.assert_outcomes(failed=2)
    replay.stdout.fnmatch_lines(["*test_dropped_carry?fixture:*", "*first: timestep 64: error*"])


def test_a_failure_is_shrunk_and_its_rerun_command_runs_the_shrunk_case_alone(project):
    saved = project.path / "failures"
    result = run(project, "--larc", f"--larc-save={saved}", "-k", "test_dropped_carry")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*shrunk: * reductions (* cases run): T 100->99->*->65; H 2->1; K 16->1; V 16->1",
                                 "*larc: gdn fp32 [[]1,65,1,1,1] seed 1 (shrunk) -- FAIL*",
                                 "*rerun:       pytest *test_dropped_carry?fixture:*shrunk-fp32-1x65x1x1x1-s1?? --larc "
                                 "--larc-replay *shrunk-fp32-1x65x1x1x1-s1.safetensors",
                                 "*shrunk to [[]1,65,1,1,1]: saved *"])
    rerun = next(line for line in result.stdout.lines if "rerun:       pytest" in line and "--larc-replay" in line)
    _, *args = shlex.split(rerun.split("rerun:       ", 1)[1])
    again = project.runpytest_subprocess(*args, "--larc-shrink", "0", f"--larc-save={project.path / 'again'}")
    again.assert_outcomes(failed=1)  # the shrunk case alone, still failing, and not shrunk again
    again.stdout.fnmatch_lines(["*larc: gdn fp32 [[]1,65,1,1,1] seed 1 * -- FAIL*", "*first: timestep 64: error*"])
    assert "shrunk:" not in again.stdout.str()


def test_verdicts_of_xdist_workers_reach_the_json_and_the_summary(project):
    pytest.importorskip("xdist")
    result = run(project, "-p", "xdist", "-n", "2", "--larc", "--larc-shrink", "0", "--larc-json=larc.json",
                 f"--larc-save={project.path / 'failures'}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*larc: 2 verdicts, 1 failed*"])
    report = json.loads((project.path / "larc.json").read_text())
    assert sorted((r["test"].split("[")[0].split("::")[-1], r["pass"]) for r in report["results"]) == [
        ("test_dropped_carry", False), ("test_honest", True)]


def installed_entry_point(project):
    """The plugin's pytest11 entry point, as `pip install` of the package registers it, in a dist-info
    folder on the path of pytester's runs (their working directory)."""
    info = project.path / "larc_entry_point-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: larc-entry-point\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nlarc = larc.pytest_plugin\n")


@pytest.mark.parametrize("loaded_by, pytest_command", [
    ("-p", "pytest -p larc.pytest_plugin"),
    ("conftest", "pytest -p larc.pytest_plugin"),  # -p of a plugin a conftest also loads: harmless
    ("entry point", "pytest"),  # -p would register it a second time, which pytest refuses
    ("entry point, autoload off", "pytest -p larc"),
])
def test_the_rerun_command_runs_as_printed_however_the_plugin_was_loaded(project, monkeypatch, loaded_by,
                                                                       pytest_command):
    args = {"-p": ["-p", "larc.pytest_plugin"], "entry point, autoload off": ["-p", "larc"]}.get(loaded_by, [])
    if loaded_by == "conftest":
        project.makeconftest('pytest_plugins = ["larc.pytest_plugin"]')
    if loaded_by.startswith("entry point"):
        installed_entry_point(project)
    if loaded_by.endswith("autoload off"):
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = project.runpytest_subprocess(*args, "--larc", "--larc-shrink", "0", "-k", "test_dropped_carry")
    result.assert_outcomes(failed=1)
    rerun = next(line for line in result.stdout.lines if "rerun:" in line).split("rerun:       ", 1)[1]
    assert rerun == f"{pytest_command} 'test_kernels.py::test_dropped_carry[fp32-1x100x2x16x16-s1]' --larc"
    _, *rerun_args = shlex.split(rerun)
    again = project.runpytest_subprocess(*rerun_args)
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["*larc: gdn fp32 [[]1,100,2,16,16] seed 1 (grid) -- FAIL*"])


def test_the_readmes_python_quick_start_runs_as_written(pytester):
    """README.md's "From Python" example: its code block saved under the name it gives, run with its command."""
    section = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text().split("**From Python.**", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    command = re.search(r"`PYTHONPATH=build/python (pytest [^`]*)`", section).group(1)
    expected = re.search(r"\((\d+) cases, (?:both|all) pass\)", section)
    pytester.makepyfile(**{shlex.split(command)[-1].removesuffix(".py"): code})
    result = pytester.runpytest_subprocess(*shlex.split(command)[1:])  # PYTHONPATH: this run's, build/python
    result.assert_outcomes(passed=int(expected.group(1)))
