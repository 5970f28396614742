"""larc's pytest plugin (entry point pytest11 "larc"; uninstalled: `pytest -p larc.pytest_plugin`).

    @pytest.mark.larc("gdn", dtypes=["bf16"], shapes=[(1, 256, 2, 64, 64)], limits={"head_dims": [64]})
    def test_my_gdn(larc_case):
        larc_case.gate(my_gdn, device="cuda")

    @pytest.mark.larc("gdn", grad=True, dtypes=["bf16"])   # my_gdn's gradients through torch autograd
    def test_my_gdn_backward(larc_case):
        larc_case.gate(my_gdn, device="cuda")

`pytest --larc` parametrises every larc-marked test over larc's cases (ids like bf16-1x256x2x64x64-s1,
random3-..., fixture:NAME); without --larc those tests skip. A failure is shrunk to the smallest case
that still fails (--larc-shrink N bounds the candidates judged; 0 turns it off). Every verdict reached inside a test (the
marker's cases and direct larc.gate/larc.check calls alike) lands in the test's JUnit properties (seed,
verdict, worst_ratio, reproduce, fixture) and in --larc-json. Loading it imports nothing heavy: numpy
and liblarc load when the first case is planned.
"""
import json
import os
import shlex
import sys

import pytest

from larc import _context

MARKER = ("larc(mechanism, dtypes=None, shapes=None, random=0, knobs=None, limits=None, initial_state=True, grid=True, "
          "grad=False): parametrise the test's larc_case fixture over larc's cases for a kernel of `mechanism` "
          "(grad=True: its gradient cases)")
RESULTS = pytest.StashKey[list]()  # every verdict of the session, for --larc-json and the summary
ITEM_RESULTS = pytest.StashKey[list]()  # the verdicts one test reached, carried on its call report
_session_config = None  # this process's config: pytest_runtest_logreport is given the report alone


def pytest_addoption(parser):
    g = parser.getgroup("larc", "larc: gate kernels against a certified oracle")
    g.addoption("--larc", action="store_true", help="run the cases of larc-marked tests (skipped without it)")
    g.addoption("--larc-seed", type=int, default=1, metavar="S", help="seed of the grid's inputs and of the random cases (default 1)")
    g.addoption("--larc-random", type=int, default=None, metavar="N",
                help="randomized cases per larc-marked test (default: the marker's random, else 0)")
    g.addoption("--larc-replay", action="append", default=[], metavar="PATH",
                help="replay the larc fixtures in PATH (files or folders; repeatable) instead of the grid and random cases")
    g.addoption("--larc-save", metavar="DIR", default=None, help="where failing cases are saved (default .larc/failures)")
    g.addoption("--larc-json", metavar="FILE", default=None, help="write every verdict as JSON (the gate's result schema)")
    g.addoption("--larc-shrink", type=int, default=None, metavar="N",
                help="shrink each failure to the smallest case that still fails, judging at most N candidates "
                     "(default 200; 0: no shrinking)")


def pytest_configure(config):
    global _session_config
    config.addinivalue_line("markers", MARKER)
    config.stash[RESULTS] = []
    _session_config = config


def _is_xdist_worker(config):
    return hasattr(config, "workerinput")


def _rerun_options(config, case):
    """The options that bring back `case` (a larc.Case or None) alone."""
    opts = []
    seed = config.getoption("larc_seed")
    if seed != 1:
        opts.append(f"--larc-seed {seed}")
    if case is not None:
        origin = case.spec["origin"]
        if origin == "random":
            opts.append(f"--larc-random {int(case.id.split('-')[0].removeprefix('random')) + 1}")
        elif origin != "grid":
            opts.append(f"--larc-replay {shlex.quote(origin)}")
    return "".join(" " + o for o in opts)


def _pytest_command(config):
    """The command that starts pytest with this plugin as this session has it: `pytest` where its entry
    point loaded it (an installed package; `-p` would register it a second time, which pytest refuses),
    else `pytest -p NAME` (loaded by -p, a conftest's pytest_plugins or PYTEST_PLUGINS, all of which
    `-p` of the plugin leaves as they are; or by its entry point's name where autoloading is off)."""
    plugins = config.pluginmanager
    me = sys.modules[__name__]
    by_entry_point = any(plugin is me for plugin, _ in plugins.list_plugin_distinfo())
    if by_entry_point and not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return "pytest"
    return f"pytest -p {plugins.get_name(me)}"


def pytest_generate_tests(metafunc):
    marker = metafunc.definition.get_closest_marker("larc")
    if marker is None or "larc_case" not in metafunc.fixturenames:
        return
    config = metafunc.config
    if not config.getoption("larc"):
        metafunc.parametrize("larc_case", [pytest.param(None, marks=pytest.mark.skip(reason="larc cases run with --larc"))],
                             ids=["larc-off"])
        return
    import larc

    kwargs = dict(marker.kwargs)
    if marker.args:
        kwargs["mechanism_name"] = marker.args[0]
    elif "mechanism" in kwargs:
        kwargs["mechanism_name"] = kwargs.pop("mechanism")
    else:
        raise ValueError(f"{metafunc.definition.nodeid}: @pytest.mark.larc needs the mechanism (e.g. larc(\"gdn\"))")
    kwargs["seed"] = config.getoption("larc_seed")
    if config.getoption("larc_random") is not None:
        kwargs["random"] = config.getoption("larc_random")
    replay = config.getoption("larc_replay")
    if replay:
        kwargs.update(fixtures=replay, grid=False, random=0)
    try:
        cases = larc.cases(**kwargs)
    except ValueError as e:
        if not replay or "nothing to run" not in str(e):
            raise
        cases = []
    if not cases:
        metafunc.parametrize("larc_case", [pytest.param(None, marks=pytest.mark.skip(reason="no larc case fits this kernel"))],
                             ids=["no-case"])
        return
    metafunc.parametrize("larc_case", cases, ids=[c.id for c in cases])


@pytest.fixture
def larc_case(request):
    """The larc.Case this test runs on (parametrised by the larc marker)."""
    return request.param


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Points larc at this test (its reproduce command, the save folder) while it runs, then records the
    verdicts it reached as the test's JUnit properties."""
    params = getattr(item, "callspec", None) and item.callspec.params
    case = params.get("larc_case") if params else None
    saved = dict(_context.current)
    _context.current.update(nodeid=item.nodeid, pytest=_pytest_command(item.config),
                            rerun_options=_rerun_options(item.config, case),
                            save_dir=item.config.getoption("larc_save"), results=[],
                            shrink=item.config.getoption("larc_shrink"),
                            replay_test=item.nodeid.split("[")[0] if case is not None else None)
    try:
        yield
    finally:
        results = _context.current["results"]
        _context.current.update(saved)
        _record(item, results)


def _record(item, results):
    for i, r in enumerate(results):
        suffix = "" if len(results) == 1 else f".{i}"
        j = r.json
        shrunk = j.get("shrunk", {})
        for key, value in (("seed", j["seed"]), ("verdict", "pass" if j["pass"] else "fail"),
                           ("worst_ratio", j.get("worst_ratio")), ("reproduce", j.get("rerun")),
                           ("judge", j.get("reproduce")), ("fixture", j.get("fixture")),
                           ("shrunk", shrunk.get("shape")), ("shrunk_fixture", shrunk.get("fixture")),
                           ("shrunk_reproduce", shrunk.get("rerun"))):
            if value not in (None, ""):
                item.user_properties.append((f"larc.{key}{suffix}", value))
        item.stash.setdefault(ITEM_RESULTS, []).append(dict(j, test=item.nodeid))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """The test's verdicts ride on its call report: pytest-xdist sends a report's attributes from the worker
    that ran the test to the controller, which writes --larc-json and the summary."""
    outcome = yield
    if call.when == "call":
        outcome.get_result().larc_results = item.stash.get(ITEM_RESULTS, [])


def pytest_runtest_logreport(report):
    if _session_config is not None:
        _session_config.stash[RESULTS].extend(getattr(report, "larc_results", None) or [])


def pytest_sessionfinish(session):
    path = session.config.getoption("larc_json")
    if not path or _is_xdist_worker(session.config):  # the controller writes every worker's verdicts
        return
    results = session.config.stash[RESULTS]
    tree = "unknown"
    if "larc._case" in sys.modules:
        from larc import _case
        tree = _case.tree_hash()
    with open(path, "w") as f:
        json.dump({"tree_hash": tree, "results": results}, f, indent=2)


def pytest_terminal_summary(terminalreporter, config):
    results = config.stash[RESULTS]
    if not results:
        return
    failed = [r for r in results if not r["pass"]]
    terminalreporter.write_sep("-", f"larc: {len(results)} verdicts, {len(failed)} failed")
    for r in failed:
        terminalreporter.write_line(f"{r['test']}: saved {r.get('fixture')}; judge again: {r.get('reproduce') or '-'}")
        if "shrunk" in r:
            s = r["shrunk"]
            terminalreporter.write_line(f"  shrunk to [{s['shape']}]: saved {s.get('fixture')}; rerun: {s.get('rerun')}")
