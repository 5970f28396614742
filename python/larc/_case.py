"""Cases, verdicts and the gate (docs/python.md): a case's inputs go to the caller's callable in FLA's
layout, its outputs are checked for what the harness's guards can see from outside (inputs unchanged,
nothing written past an input, two runs bitwise equal, the right type, device, dtype and shape per
output) and judged by liblarc against the certified oracle at the declared grade; a failure is saved
as a larc fixture plus the candidate's outputs, which `larc diff` replays on any CPU machine. A
gradient case (a mechanism's gradient twin, "gdn-backward") is judged on the gradients, which a
forward callable's torch autograd gives (autograd.py) or a callable taking the cotangents returns."""
import ctypes
import hashlib
import inspect
import json
import os
import re
import shlex
import traceback

import numpy as np

from . import _arrays, _context, _native, autograd

# The longest file-name stem of a saved failure: with ".candidate.safetensors" within the 255 bytes
# a file name may have.
_MAX_STEM = 200

DTYPES = ("bf16", "fp16", "fp32", "fp64")
GRADES = ("fp32", "io", "io:tf32", "io:tf32-truncated")
DEFAULT_SHAPE = (1, 100, 2, 16, 16)
# Candidates judged at most when a failure is shrunk: the fuzzer's bound (harness/fuzz.cpp).
SHRINK_EVALUATIONS = 200
_registry = None


def mechanisms():
    """The mechanism registry: name -> {"inputs", "outputs", "knobs", "parameters", ...}."""
    global _registry
    if _registry is None:
        _registry = {m["name"]: m for m in _native.take_json(_native.lib().larc_mechanisms_json())["mechanisms"]}
    return _registry


def _mechanism_spec(name):
    """The registry's entry of mechanism `name`; ValueError naming the known ones otherwise."""
    if not isinstance(name, str) or name not in mechanisms():
        raise ValueError(f"mechanism: unknown {name!r} (known: {', '.join(mechanisms())})")
    return mechanisms()[name]


def _is_twin(spec):
    """Whether a registry entry is a gradient twin (it names its forward among its parameters)."""
    return "forward" in spec["parameters"]


def _twin_of(mechanism, argument="grad"):
    """The gradient twin of mechanism `mechanism` ("gdn" -> "gdn-backward"; a twin is its own); ValueError
    naming `argument` when it has none."""
    if _is_twin(_mechanism_spec(mechanism)):
        return mechanism
    twin = mechanism + "-backward"
    _require(twin in mechanisms(), argument, f"{mechanism} has no gradient twin (those with one: "
             f"{', '.join(mechanisms()[m]['parameters']['forward'] for m in mechanisms() if _is_twin(mechanisms()[m]))})")
    return twin


def _takes(fn, name):
    """Whether callable fn names argument `name` in its signature (False when it has none to read)."""
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _synchronize(dev):
    if dev is not None and dev.type == "cuda":
        _arrays.torch_module().cuda.synchronize(dev)


def _raised(who, e):
    frames = traceback.extract_tb(e.__traceback__)
    at = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{who} raised {type(e).__name__}: {e}{at}"


def tree_hash():
    return _native.take_string(_native.lib().larc_tree_hash())


def _require(condition, argument, message):
    if not condition:
        raise ValueError(f"{argument}: {message}")


def _check_dtype(dtype, argument="dtype"):
    _require(dtype in DTYPES, argument, f"expected one of {', '.join(DTYPES)}, got {dtype!r}")


def _check_shape(shape, argument="shape"):
    ok = isinstance(shape, (tuple, list)) and len(shape) in (5, 6) and all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 1 for s in shape)
    _require(ok, argument, f"expected (B, T, H, K, V) or (B, T, H, K, V, HV), five or six integers of at least 1, "
                           f"got {shape!r}")
    return tuple(int(s) for s in shape)


def _check_grades(grade, grade_of, outputs):
    _require(grade in GRADES, "grade", f"expected one of {', '.join(GRADES)}, got {grade!r}")
    grade_of = dict(grade_of or {})
    for output, g in grade_of.items():
        _require(output in outputs, "grade_of", f"{output!r} is not an output (the outputs: {', '.join(outputs)})")
        _require(g in GRADES, "grade_of", f"{output}: expected one of {', '.join(GRADES)}, got {g!r}")
    return [f"{o}={g}" for o, g in grade_of.items()]


def _available_devices(torch):
    """The devices a callable's tensors can be on here: the CPU and each CUDA device torch sees."""
    return ["cpu"] + ([f"cuda:{i}" for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else [])


def _parse_device(device):
    """The torch device `device` names (None: numpy arrays, no device). ValueError naming `device`, with
    the devices there are, when it is not a device, or one this machine's torch cannot put a tensor on:
    refused before any case is prepared rather than failing inside torch at the first input."""
    if device is None:
        return None
    torch = _arrays.torch_module()
    available = _available_devices(torch)
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device: {device!r} is not a torch device ({e}); "
                         f"available here: {', '.join(available)}") from None
    if dev.type == "cpu" or str(dev) in available or (dev.type == "cuda" and dev.index is None and len(available) > 1):
        return dev
    if dev.type != "cuda":
        why = "larc takes cpu and cuda devices"
    elif not torch.cuda.is_available():
        why = "torch.cuda.is_available() is False"
    else:
        why = f"torch.cuda.device_count() is {torch.cuda.device_count()}"
    raise ValueError(f"device: {device!r} is not available here ({why}; available: {', '.join(available)})")


def _device_matches(actual, wanted):
    """Whether a tensor's device is the one asked for ("cuda" takes any CUDA device)."""
    return actual.type == wanted.type and (wanted.index is None or actual.index == wanted.index)


def _pytest_rerun():
    """The pytest command that reruns the running test's case alone ("" outside pytest)."""
    test = _context.current
    return f"{test['pytest']} {shlex.quote(test['nodeid'])} --larc{test['rerun_options']}" if test["nodeid"] else ""


def _callable_name(fn):
    """How a rerun command names the callable: its qualified name (a nested function's name in its
    scope), or fn where it has none a caller could type (a lambda, a callable object, a partial)."""
    name = (getattr(fn, "__qualname__", None) or "").rpartition("<locals>.")[2]
    return name if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name) else "fn"


def _gate_call(case, fn_name, options):
    """The Python call that runs the callable on `case` alone: larc.gate of the case's spec, which
    generates the same inputs again, or for a case read from a fixture Case.from_fixture of it.
    options: the run's arguments that differ from their defaults (device, grade, grade_of, runs)."""
    s = case.spec
    rest = "".join(f", {k}={v!r}" for k, v in options.items())
    if s["origin"] not in ("grid", "random", "shrunk"):  # a fixture's path
        return f"larc.Case.from_fixture({s['origin']!r}).gate({fn_name}{rest})"
    knobs = case.non_default_knobs()
    shape = tuple(int(x) for x in s["shape"].split(","))
    mechanism = _mechanism_spec(s["mechanism"])["parameters"]["forward"] if case.is_gradient else s["mechanism"]
    return (f"larc.gate({fn_name}, mechanism={mechanism!r}, dtype={s['dtype']!r}, shape={shape}, seed={s['seed']}"
            + (f", knobs={knobs!r}" if knobs else "") + (", grad=True" if case.is_gradient else "") + rest + ")")


def _collect(result):
    """Hands a verdict to the pytest plugin, when a test is running (its JUnit properties, --larc-json)."""
    if _context.current["results"] is not None:
        _context.current["results"].append(result)


def _fmt(x):
    return "-" if x is None else f"{x:.3g}"


def _shrink_budget(shrink):
    """The candidates a failure's shrink may judge (0: no shrinking) for run()'s `shrink` argument."""
    if shrink is None:
        shrink = _context.current["shrink"]
        if shrink is None:
            return SHRINK_EVALUATIONS
    _require(isinstance(shrink, (bool, int, np.integer)) and shrink >= 0, "shrink",
             f"expected True, False or a number of candidates (at least 0), got {shrink!r}")
    return SHRINK_EVALUATIONS if shrink is True else int(shrink)


def _dims(spec):
    """A spec's sizes by name; HV (the value heads) only where the shape gives them."""
    return dict(zip(("B", "T", "H", "K", "V", "HV"), (int(x) for x in spec["shape"].split(","))))


def _reductions(specs):
    """What changed along a shrink's path of specs, per size and knob in the order each first changed:
    "T 100->50->25; H 2->1; decay_max 0.05->1"."""
    changes = {}
    for a, b in zip(specs, specs[1:]):
        da, db = _dims(a), _dims(b)
        for name in ("B", "T", "H", "K", "V", "HV"):
            if name in da or name in db:  # HV is H where the shape does not give it
                x, y = da.get(name, da["H"]), db.get(name, db["H"])
                if x != y:
                    changes.setdefault(name, [x]).append(y)
        for name in sorted(set(a["knobs"]) | set(b["knobs"])):
            if a["knobs"].get(name) != b["knobs"].get(name):
                changes.setdefault(name, [a["knobs"].get(name)]).append(b["knobs"].get(name))
    return "; ".join(f"{name} " + "->".join(f"{v:g}" for v in values) for name, values in changes.items()) or "none"


def _shrunk_rerun(result, fn_name, options):
    """The command that runs the kernel on a shrunk failure alone: inside a test parametrised by the
    larc marker, pytest replaying the shrunk case's fixture; elsewhere the larc.gate call."""
    test = _context.current
    if test["replay_test"]:
        stem = os.path.basename(result.fixture).removesuffix(".safetensors")
        return (f"{test['pytest']} {shlex.quote(test['replay_test'] + '[fixture:' + stem + ']')} --larc "
                f"--larc-replay {shlex.quote(result.fixture)}")
    return _gate_call(result.case, fn_name, options)


class OutputVerdict:
    """One output's verdict: the gate's JSON for it (docs/gate.md) as attributes."""

    def __init__(self, j):
        self.json = j

    def __getattr__(self, key):
        try:
            return self.json[key]
        except KeyError:
            raise AttributeError(key) from None

    @property
    def passed(self):
        return self.json["pass"]


class GateFailure(AssertionError):
    """A case the callable failed; .result holds the verdict."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


class Result:
    """A callable's verdict on one case."""

    def __init__(self, case, kernel, j, handle=None, host=None):
        self.case, self.kernel, self.json, self._handle, self._host = case, kernel, j, handle, host
        self.fixture = self.candidate = None
        # A shrunk failure: the smallest case that still fails (its Result, saved), the specs the shrink
        # moved through, the candidates it judged, or why it stopped.
        self.shrunk, self.shrink_path, self.shrink_evaluations, self.shrink_stopped = None, [], 0, None

    def __del__(self):
        if self._handle and _native.loaded():
            _native.lib().larc_result_free(self._handle)

    @property
    def passed(self):
        return self.json["pass"]

    @property
    def errors(self):
        return self.json["errors"]

    @property
    def outputs(self):
        return {o["output"]: OutputVerdict(o) for o in self.json.get("outputs", [])}

    @property
    def worst_ratio(self):
        return self.json.get("worst_ratio")

    @property
    def reproduce(self):
        return self.json.get("reproduce", "")

    def write_candidate(self, path, metadata=None):
        """Writes the outputs this verdict judged (the first run's) as a candidate file, which `larc diff
        FIXTURE CANDIDATE` judges again; metadata: {key: string} added to its header."""
        _require(self._host is not None, "result", "no outputs were judged (the callable raised or returned "
                 "something malformed): nothing to write")
        self.case._write_candidate(path, self._host, self.kernel, metadata)
        return path

    def message(self):
        lines = [self._case_message()]
        if self.shrunk is not None:
            lines.append(f"  shrunk:      {len(self.shrink_path)} reductions ({self.shrink_evaluations} cases run): "
                         f"{_reductions([self.json] + self.shrink_path)}")
            lines.append(self.shrunk._case_message())
        elif self.shrink_stopped:
            lines.append(f"  shrunk:      no: {self.shrink_stopped}")
        elif not self.passed and self.shrink_evaluations:
            lines.append(f"  shrunk:      no smaller case fails the same way ({self.shrink_evaluations} cases run)")
        return "\n".join(lines)

    def _case_message(self):
        j = self.json
        knobs = " ".join(f"{k}={v:g}" for k, v in sorted(self.case.non_default_knobs().items()))
        lines = [f"larc: {j['mechanism']} {j['dtype']} [{j['shape']}] seed {j['seed']}{' knobs ' + knobs if knobs else ''} "
                 f"({j['origin']}) -- {'pass' if self.passed else 'FAIL'} (kernel {self.kernel})"]
        time_axis = {o["name"]: o["time_axis"] for o in self.case.info["outputs"]}
        for name, o in self.outputs.items():
            at = f" at t={o.worst_timestep}" if time_axis.get(name, -1) >= 0 else ""
            head = (f"  {name:<12} {'pass' if o.passed else 'FAIL'} at {o.grade_declared} (grade met: {o.grade_met}): "
                    f"worst ratio {_fmt(o.worst_ratio)}{at}; max_rel_err {_fmt(o.max_rel_err)} vs "
                    f"baseline {_fmt(o.baseline_rel_err)}; cosine {o.cosine:.6g} (never a criterion)")
            lines.append(head)
            if not o.passed:
                caught = ", ".join(f"{o.json[k]} {k.replace('_', ' ')}" for k in
                                   ("unwritten", "non_finite", "timestep_violations", "window_violations") if o.json[k])
                if caught:
                    lines.append(f"{'':15}caught by: {caught}")
                first = next((e for e in self.errors if e.startswith(name + ": ")), None)
                if first:
                    lines.append(f"{'':15}first: {first.removeprefix(name + ': ')}")
                worst = " | ".join(f"{w['t']}: {w['error']:.3g} > {w['tolerance']:.3g} ({_fmt(w['ratio'])})"
                                   if w["ratio"] is None or w["ratio"] > 1 else
                                   f"{w['t']}: {w['error']:.3g} <= {w['tolerance']:.3g} ({_fmt(w['ratio'])})"
                                   for w in o.worst_timesteps)
                if worst:
                    lines.append(f"{'':15}worst timesteps (t: error vs tolerance (ratio)): {worst}")
            grades = ", ".join(f"{g} {_fmt(v['worst_ratio'])}{'' if v['pass'] else ' (fail)'}" for g, v in o.grades.items())
            lines.append(f"{'':15}ratio per grade: {grades}")
        # The tolerance violations are summarised per output above; every other problem is listed.
        for e in [e for e in self.errors if not re.match(r"[\w.]+: (timestep|window|whole tensor)", e)][:8]:
            lines.append(f"  error: {e}")
        if self.fixture:
            lines.append(f"  saved:       {self.fixture}" + (f" (+ candidate {self.candidate})" if self.candidate else ""))
        if self.reproduce:
            lines.append(f"  reproduce:   {self.reproduce}")
        if j.get("rerun"):
            lines.append(f"  rerun:       {j['rerun']}")
        if j.get("oracle_method"):
            lines.append(f"  oracle:      dd_real, certified; error estimate {j['oracle_method']}")
        return "\n".join(lines)

    def assert_pass(self):
        if not self.passed:
            raise GateFailure(self.message(), self)
        return self


class Case:
    """One of larc's cases: a spec (mechanism, dtype, shape, seed, knobs, origin) whose inputs and
    certified oracle are prepared on first use (liblarc), or a fixture read back."""

    def __init__(self, spec, case_id=None, handle=None):
        self.spec, self._handle, self._info, self._twin = dict(spec), handle, None, None
        self.id = case_id or self._default_id()
        self.limits = None  # the kernel's shape limits (cases(limits=...)): a shrunk case keeps to them

    @classmethod
    def prepare(cls, mechanism, dtype="fp32", shape=DEFAULT_SHAPE, seed=1, knobs=None):
        """The case (mechanism, dtype, shape (B, T, H, K, V), seed, knobs), prepared now: its inputs
        generated and its oracle computed; a wrong argument raises ValueError naming it."""
        _mechanism_spec(mechanism)
        _check_dtype(dtype)
        shape = _check_shape(shape)
        _require(isinstance(seed, (int, np.integer)) and 0 <= seed < 2 ** 64, "seed", f"expected an integer in [0, 2^64), got {seed!r}")
        knobs = dict(knobs or {})
        spec = {"mechanism": mechanism, "dtype": dtype, "shape": ",".join(map(str, shape)), "seed": int(seed), "knobs": knobs,
                "origin": "grid"}
        case = cls(spec)
        case.handle  # prepared now: a bad knob is refused here, naming it
        return case

    @classmethod
    def from_fixture(cls, path):
        """The case a larc fixture holds (its inputs and oracle as written, e.g. a saved failure)."""
        path = os.fspath(path)
        handle = _native.checked(_native.lib().larc_case_read_fixture(path.encode()))
        info = _native.take_json(_native.lib().larc_case_json(handle))
        spec = {k: info[k] for k in ("mechanism", "dtype", "shape", "seed", "knobs", "origin")}
        return cls(spec, f"fixture:{os.path.basename(path).removesuffix('.safetensors')}", handle)

    def __del__(self):
        if self._handle and _native.loaded():
            _native.lib().larc_case_free(self._handle)

    def __repr__(self):
        return f"larc.Case({self.id!r}, {self.spec['mechanism']})"

    @property
    def handle(self):
        if not self._handle:
            spec = {k: self.spec[k] for k in ("mechanism", "dtype", "shape", "seed", "knobs", "origin")}
            self._handle = _native.checked(_native.lib().larc_case_prepare(_native.encode(spec)))
        return self._handle

    @property
    def info(self):
        """The prepared case: spec, parameters, oracle method, inputs' and outputs' names, dtypes, shapes."""
        if self._info is None:
            self._info = _native.take_json(_native.lib().larc_case_json(self.handle))
        return self._info

    @property
    def is_gradient(self):
        """Whether this is a gradient case (its mechanism a gradient twin, e.g. "gdn-backward")."""
        return _is_twin(_mechanism_spec(self.spec["mechanism"]))

    def _case_for(self, grad):
        """The case run(grad=...) runs: this one, or for grad=True on a forward case the gradient case of
        the same spec (its twin's, the cotangents drawn from the seed), prepared once."""
        _require(grad is None or isinstance(grad, bool), "grad", f"expected True, False or None, got {grad!r}")
        if self.is_gradient:
            _require(grad is not False, "grad", f"this is a gradient case ({self.spec['mechanism']}): run it with grad=True or None")
            return self
        if not grad:
            return self
        if self._twin is None:
            self._twin = Case(dict(self.spec, mechanism=_twin_of(self.spec["mechanism"])), self.id)
            self._twin.limits = self.limits
        return self._twin

    def non_default_knobs(self):
        defaults = {k["name"]: k["default"] for k in _mechanism_spec(self.spec["mechanism"])["knobs"]}
        return {k: v for k, v in self.spec["knobs"].items() if defaults.get(k) != v}

    def _default_id(self):
        s = self.spec
        knobs = self.non_default_knobs()
        parts = [s["dtype"], s["shape"].replace(",", "x"), f"s{s['seed']}"]
        if knobs.pop("initial_state", 0) == 2:
            parts.append("h0")
        parts += [f"{k}={v:g}" for k, v in sorted(knobs.items())]
        return "-".join(parts)

    def _tensor(self, name):
        t = _native.Tensor()
        _native.check_status(_native.lib().larc_case_tensor(self.handle, name.encode(), t))
        raw = ctypes.string_at(t.data, t.nbytes)
        return _arrays.decode(raw, t.dtype.decode(), tuple(t.shape[i] for i in range(t.ndim)))

    def inputs(self, device=None):
        """The case's inputs by name, fresh copies: numpy arrays (bf16 widened exactly to float32), or
        torch tensors in the case's dtypes on `device`."""
        dev = _parse_device(device)
        out = {}
        for i in self.info["inputs"]:
            a = self._tensor(i["name"])
            out[i["name"]] = a if dev is None else _arrays.to_torch(a, i["dtype"], dev)
        return out

    def oracle(self, name="o"):
        """The oracle's output `name` in float64."""
        return self._tensor("oracle." + name)

    def parameters(self):
        """The mechanism's numeric parameters for this case (scale resolved: K^-1/2 → a number, or the
        case's own scale, its input "scale", when the scale_factor knob gives one)."""
        K = int(self.spec["shape"].split(",")[3])
        out = {}
        for k, v in self.info["parameters"].items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = float(v)
            elif v == "K^-1/2":
                out[k] = K ** -0.5
        if any(i["name"] == "scale" for i in self.info["inputs"]):
            out["scale"] = float(self._tensor("scale")[0])
        return out

    def save(self, path, metadata=None):
        """Writes the case as a larc fixture (inputs, oracle, estimate, metadata)."""
        path = os.fspath(path)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        meta = {k: str(v) for k, v in (metadata or {}).items()}
        _native.check_status(_native.lib().larc_case_write_fixture(self.handle, path.encode(), _native.encode(meta)))
        return path

    def gate(self, fn, **options):
        """run(), raising GateFailure (an AssertionError) with the figures when the callable fails."""
        return self.run(fn, **options).assert_pass()

    def run(self, fn, device=None, grade="fp32", grade_of=None, runs=2, kernel=None, save_dir=None, profile=None,
            profile_subject=None, grad=None, shrink=None):
        """Runs `fn` on the case `runs` times and judges it; returns a Result (never raises for what
        the callable does). A failure is saved under save_dir (default $LARC_SAVE_DIR or .larc/failures)
        and shrunk: the smallest case that still fails the same way (Result.shrunk, saved beside it).
        grad: None runs the case as it is (a gradient twin's case is a gradient case); True runs the
        gradient case of this case's spec; False refuses a gradient case. On a gradient case a callable
        that takes `do` returns the gradients itself; any other is the forward, differentiated by torch
        autograd (device required). shrink: True (up to SHRINK_EVALUATIONS candidates), False, or the
        number of candidates to judge at most; None: --larc-shrink inside pytest, else True."""
        case = self._case_for(grad)
        if case is not self:
            return case.run(fn, device=device, grade=grade, grade_of=grade_of, runs=runs, kernel=kernel, save_dir=save_dir,
                            profile=profile, profile_subject=profile_subject, shrink=shrink)
        _require(callable(fn), "fn", f"expected a callable, got {type(fn).__name__}")
        grade_of_list = _check_grades(grade, grade_of, [o["name"] for o in _mechanism_spec(self.spec["mechanism"])["outputs"]])
        _require(isinstance(runs, int) and not isinstance(runs, bool) and runs >= 1, "runs", f"expected an integer of at least 1, got {runs!r}")
        budget = _shrink_budget(shrink)
        dev = _parse_device(device)
        kernel = kernel or getattr(fn, "__qualname__", None) or type(fn).__name__
        result = self._evaluate(fn, dev, kernel, grade, grade_of_list, runs, profile, profile_subject)
        # The run's arguments a rerun must repeat: those that differ from their defaults.
        rerun_options = {k: v for k, v, default in (("device", None if dev is None else str(dev), None),
                                                    ("grade", grade, "fp32"), ("grade_of", dict(grade_of or {}), {}),
                                                    ("runs", runs, 2)) if v != default}
        fn_name = _callable_name(fn)
        result.json["rerun"] = _pytest_rerun() or _gate_call(self, fn_name, rerun_options)
        if not result.passed:
            self._save_failure(result, save_dir, grade, grade_of_list, "larc (python)")
            if budget:
                # Candidates are judged without the profile: it holds the original case's errors alone.
                self._shrink(result, lambda c: c._evaluate(fn, dev, kernel, grade, grade_of_list, runs), budget, save_dir,
                             grade, grade_of_list, lambda shrunk: _shrunk_rerun(shrunk, fn_name, rerun_options))
        else:
            result.json["reproduce"] = ""  # nothing was saved to judge again
        _collect(result)
        return result

    def _evaluate(self, fn, dev, kernel, grade, grade_of_list, runs, profile=None, profile_subject=None):
        """Runs `fn` on the case `runs` times and judges the first run: the Result, nothing saved."""
        if self.is_gradient and not _takes(fn, "do"):
            call, buffers, pristine = self._autograd_call(fn, dev)
        else:
            call, buffers, pristine = self._direct_call(fn, dev)

        errors, structural, runs_out = [], False, []
        for _ in range(runs):
            try:
                outputs, problems = call()
            except autograd.BackwardRaised as e:  # the callable's backward, reached through autograd
                errors.append(_raised("the callable's backward (torch.autograd.grad)", e.error))
                structural = True
                break
            except Exception as e:  # anything the callable raises is the case's failure, not ours
                errors.append(_raised("the callable", e))
                structural = True
                break
            errors += self._input_problems(buffers, pristine)
            if problems:
                errors += problems
                structural = True
                break
            runs_out.append(outputs)
        deterministic = True
        for later in runs_out[1:]:
            for name, a in runs_out[0].items():
                if not _arrays.bitwise_equal(a, later[name]):
                    deterministic = False
                    errors.append(f"{name}: two runs on the same inputs differ in {_arrays.differing_elements(a, later[name])} "
                                  f"of {a.size if not _arrays.is_torch(a) else a.numel()} elements (nondeterministic)")
        errors = list(dict.fromkeys(errors))  # a problem seen in every run is reported once

        if not runs_out or structural:
            return Result(self, kernel, self._unjudged_json(kernel, errors, deterministic))
        host = [(n, *_arrays.host_raw(a, self.spec["dtype"])) for n, a in runs_out[0].items()]
        config = {"kernel": kernel, "grade": grade, "grade_of": grade_of_list, "errors": errors,
                  "deterministic": deterministic}
        if profile is not None:
            config["against"] = os.fspath(profile)
        if profile_subject:
            config["profile_subject"] = profile_subject
        arr, keep = _native.tensor_array(host)
        handle = _native.checked(_native.lib().larc_judge(self.handle, arr, len(host), _native.encode(config)))
        del keep
        return Result(self, kernel, _native.take_json(_native.lib().larc_result_json(handle)), handle, host)

    def _save_failure(self, result, save_dir, grade, grade_of_list, found_by):
        """Saves a failure: the case as a fixture and, when outputs were judged, them as its candidate, with
        the `larc diff` command judging them again (result.json["reproduce"])."""
        kernel = result.kernel
        fixture, candidate = self._failure_paths(kernel, save_dir)
        judge_cmd = " ".join(["larc", "diff", shlex.quote(fixture), shlex.quote(candidate), "--kernel", shlex.quote(kernel),
                              "--grade", grade] + [a for g in grade_of_list for a in ("--grade-of", g)])
        result.fixture = self.save(fixture, {"subject": kernel, "failure": (result.errors or ["failed"])[0],
                                             "reproduce": result.json.get("rerun") or judge_cmd, "found_by": found_by})
        if result._host is not None:
            self._write_candidate(candidate, result._host, kernel)
            result.candidate = candidate
            result.json["reproduce"] = judge_cmd
        else:
            result.json["reproduce"] = ""  # nothing to judge: the fixture alone replays the inputs
        result.json["fixture"], result.json["candidate"] = result.fixture, result.candidate

    def _shrink(self, result, evaluate, budget, save_dir, grade, grade_of_list, rerun):
        """Shrinks this case's failure `result` with liblarc's shrinker (larc_shrink: the fuzzer's), which
        hands each candidate's spec to a callback here: `evaluate(candidate case)` judges the kernel on it.
        Sets result.shrunk (the smallest failing case's Result, saved as a failure of its own, its rerun
        command rerun(that Result)), shrink_path and shrink_evaluations; or shrink_stopped, saying why
        there is none."""
        failing = []  # (spec, Result) of each candidate that failed
        verdict = [None]  # the last verdict's buffer, alive until the next call (larc_shrink_judge)
        raised = [None]

        def judge(spec_text, _user):
            # Nothing may unwind through liblarc: every exception is kept and ends the shrink.
            try:
                spec = json.loads(spec_text)
                candidate = Case(dict(spec, origin="shrunk"))
                candidate.id = "shrunk-" + candidate.id
                candidate.limits = self.limits
                r = evaluate(candidate)
                if not r.passed:
                    failing.append((spec, r))
                verdict[0] = ctypes.create_string_buffer(_native.encode(r.json))
                return ctypes.addressof(verdict[0])
            except BaseException as e:
                raised[0] = e
                return None

        options = {"max_evaluations": budget, "limits": dict(self.limits or {})}
        out = _native.lib().larc_shrink(_native.encode(result.json), _native.encode(options), _native.SHRINK_JUDGE(judge), None)
        if not out:
            e = raised[0]
            if e is not None and not isinstance(e, Exception):
                raise e  # KeyboardInterrupt, SystemExit: the user's, not the shrink's
            result.shrink_stopped = (_raised("shrinking the failure", e) if e is not None
                                     else _native.lib().larc_last_error().decode())
            result.json["shrink"] = {"stopped": result.shrink_stopped}
            return
        answer = _native.take_json(out)
        result.shrink_path, result.shrink_evaluations = answer["path"], answer["evaluations"]
        result.json["shrink"] = {"path": result.shrink_path, "evaluations": result.shrink_evaluations,
                                 "reductions": _reductions([result.json] + result.shrink_path)}
        if not result.shrink_path:
            return
        shrunk = next(r for spec, r in failing if spec == result.shrink_path[-1])
        shrunk.json["rerun"] = ""
        shrunk.case._save_failure(shrunk, save_dir, grade, grade_of_list, f"larc (python): shrunk from {self.id}")
        shrunk.json["rerun"] = rerun(shrunk)
        result.shrunk = shrunk
        result.json["shrunk"] = shrunk.json

    # --- the pieces of run() ---------------------------------------------------------------------

    def _input_arrays(self):
        """[(name, numpy array, larc dtype)] of the case's inputs but "scale" (a number among the
        parameters, as FLA takes it)."""
        return [(i["name"], self._tensor(i["name"]), i["dtype"]) for i in self.info["inputs"] if i["name"] != "scale"]

    def _call_arguments(self, fn, dev, arrays):
        """The callable's keyword arguments (each of `arrays` in a guarded buffer, and the mechanism's
        parameters its signature names), the buffers, and pristine copies of them."""
        try:
            sig = inspect.signature(fn)
            takes_any = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
            names = set(sig.parameters)
        except (TypeError, ValueError):  # no signature to read (a builtin): pass everything
            takes_any, names = True, set()
        kwargs, buffers, pristine = {}, {}, {}
        for name, a, dtype in arrays:
            if not takes_any and name not in names:
                if name == "initial_state" and self.is_gradient:
                    raise ValueError("fn: takes no argument 'initial_state': a gradient case's dh0 is the gradient with "
                                     "respect to the initial state (a zero one when the case has none), which the "
                                     "callable must take")
                raise ValueError(f"fn: takes no argument {name!r}, an input of this case "
                                 f"(plan cases with initial_state=False for a kernel without an initial state)"
                                 if name == "initial_state" else f"fn: takes no argument {name!r}, an input of {self.spec['mechanism']}")
            src = a if dev is None else _arrays.to_torch(a, dtype, dev)
            kwargs[name], buffers[name] = _arrays.with_guard(src, dev)
            pristine[name] = buffers[name].copy() if dev is None else buffers[name].clone()
        for k, v in self.parameters().items():
            if takes_any or k in names:
                kwargs[k] = v
        return kwargs, buffers, pristine

    def _direct_call(self, fn, dev):
        """One run of a callable that returns the case's outputs itself: (a function doing it and
        returning (outputs, problems), the guarded buffers, their pristine copies)."""
        kwargs, buffers, pristine = self._call_arguments(fn, dev, self._input_arrays())

        def call():
            returned = fn(**kwargs)
            _synchronize(dev)
            return self._outputs_of(returned, dev)
        return call, buffers, pristine

    def _autograd_call(self, fn, dev):
        """One run of a forward callable on a gradient case: fn on the forward's inputs (leaf tensors
        with requires_grad, views into guarded buffers whose base does not require grad), then
        torch.autograd.grad with the case's do and dht (also guarded) as the cotangents; the gradients
        are the outputs. A case without an initial state gets a zero one: the twin's dh0 (and dz0) is the
        gradient at the zero state."""
        _require(dev is not None, "device", "a forward callable on a gradient case is differentiated by torch autograd: "
                 "give a device (\"cpu\", \"cuda\"), or a callable taking the cotangents do (and dht) that returns the gradients")
        outs = {o["name"]: o for o in self.info["outputs"]}
        ins = {i["name"]: i for i in self.info["inputs"]}
        arrays = [a for a in self._input_arrays() if a[0] not in ("do", "dht")]
        for d in ("dh0", "dz0"):
            if d in outs and autograd.INPUT_OF[d] not in ins:
                arrays.append((autograd.INPUT_OF[d], np.zeros(outs[d]["shape"], np.float32), "fp32"))
        kwargs, buffers, pristine = self._call_arguments(fn, dev, arrays)
        leaves = {n: kwargs[n].requires_grad_(True) for n, _, _ in arrays if autograd.GRADIENT_OF.get(n) in outs}
        cotangents = {}
        for name in ("do", "dht"):
            if name in ins:
                src = _arrays.to_torch(self._tensor(name), ins[name]["dtype"], dev)
                cotangents[name], buffers[name] = _arrays.with_guard(src, dev)
                pristine[name] = buffers[name].clone()
        # The forward outputs the loss reads: o as do, the final state as dht (when the case has one).
        want = {"o": ins["do"]} | ({"final_state": ins["dht"]} if "dht" in ins else {})
        forward = self.info["parameters"]["forward"]
        order = [o["name"] for o in _mechanism_spec(forward)["outputs"]]

        def call():
            returned, problems = autograd.by_name(fn(**kwargs), order, forward)
            if problems:
                return {}, [problems]
            problems = [p for n, w in want.items() if returned.get(n) is not None
                        for p in self._output_problems(n, returned[n], w, dev)]
            if problems:
                return {}, problems
            grads, problems = autograd.differentiate(returned, leaves, cotangents["do"], cotangents.get("dht"))
            _synchronize(dev)
            if problems:
                return {}, problems
            missing = [f"{n}: missing: torch.autograd.grad found no path from the callable's outputs to "
                       f"{autograd.INPUT_OF.get(n, n)} (its gradient is None)" for n in outs if grads.get(n) is None]
            outputs, problems = self._outputs_of({n: g for n, g in grads.items() if g is not None}, dev, required=())
            return outputs, missing + problems
        return call, buffers, pristine

    def _input_problems(self, buffers, pristine):
        """What a run did to its inputs' guarded buffers, each problem naming the input. A changed buffer
        is restored from its pristine copy, so that the next run gets the case's inputs: its outputs
        then differ from this run's only if the callable is nondeterministic."""
        problems = []
        n_guard = _arrays.GUARD_ELEMENTS
        for name, buf in buffers.items():
            if _arrays.bitwise_equal(buf, pristine[name]):
                continue
            if not _arrays.bitwise_equal(buf[-n_guard:], pristine[name][-n_guard:]):
                problems.append(f"{name}: written past its last element (the NaN guard after the input changed)")
            if not _arrays.bitwise_equal(buf[:-n_guard], pristine[name][:-n_guard]):
                problems.append(f"{name}: the callable modified this input")
            _arrays.restore(buf, pristine[name])
        return problems

    def _outputs_of(self, returned, dev, required=None):
        """The outputs by name from what the callable returned, and every problem with them, each
        naming the output. required: the outputs that must be there (default: o, or every gradient of a
        gradient case)."""
        expected = {o["name"]: o for o in self.info["outputs"]}
        if required is None:
            required = list(expected) if self.is_gradient else ["o"]
        got, problem = autograd.by_name(returned, list(expected), self.spec["mechanism"])
        if problem:
            return {}, [problem]
        outputs, problems = {}, []
        for name, x in got.items():
            if name not in expected:
                problems.append(f"{name}: not an output of {self.spec['mechanism']} ({', '.join(expected)})")
                continue
            problems += self._output_problems(name, x, expected[name], dev)
            outputs[name] = x
        for name in required:
            if name not in outputs and not any(p.startswith(name + ":") for p in problems):
                problems.append(f"{name}: missing from what the callable returned" +
                                (f" (every gradient of {self.spec['mechanism']} is judged)" if self.is_gradient else ""))
        return outputs, problems

    def _output_problems(self, name, x, want, dev):
        if dev is None:
            if not isinstance(x, np.ndarray):
                return [f"{name}: expected a numpy array (no device given), got {type(x).__module__}.{type(x).__name__}"]
            want_dtype = np.dtype(_arrays.NUMPY_DTYPE[want["dtype"]])
            got_dtype, got_shape = x.dtype, tuple(x.shape)
        else:
            if not _arrays.is_torch(x) or not hasattr(x, "device"):
                return [f"{name}: expected a torch tensor on {dev}, got {type(x).__module__}.{type(x).__name__}"]
            if not _device_matches(x.device, dev):
                return [f"{name}: expected a tensor on {dev}, got one on {x.device}"]
            want_dtype = "torch." + _arrays.TORCH_DTYPE_NAME[want["dtype"]]
            got_dtype, got_shape = str(x.dtype), tuple(x.shape)
        problems = []
        if str(got_dtype) != str(want_dtype):
            problems.append(f"{name}: expected dtype {want_dtype}, got {got_dtype}")
        if got_shape != tuple(want["shape"]):
            problems.append(f"{name}: expected shape {list(want['shape'])}, got {list(got_shape)}")
        return problems

    def _failure_paths(self, kernel, save_dir):
        directory = (save_dir or _context.current["save_dir"] or os.environ.get("LARC_SAVE_DIR")
                     or os.path.join(".larc", "failures"))
        stem = re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{kernel}_{self.spec['mechanism']}_{self.id}")
        if len(stem) > _MAX_STEM:
            # A random case's id spells every knob: past a file system's 255 bytes per name. The start
            # keeps the kernel, mechanism, dtype and shape readable; a hash of the whole keeps names apart.
            stem = f"{stem[:_MAX_STEM - 17]}_{hashlib.sha1(stem.encode()).hexdigest()[:16]}"
        return os.path.join(directory, stem + ".safetensors"), os.path.join(directory, stem + ".candidate.safetensors")

    def _write_candidate(self, path, host, kernel, metadata=None):
        arr, keep = _native.tensor_array(host)
        meta = {"kernel": kernel, "mechanism": self.spec["mechanism"], "case": self.id} | dict(metadata or {})
        _native.check_status(_native.lib().larc_candidate_write(os.fspath(path).encode(), arr, len(host), _native.encode(meta)))
        del keep

    def _unjudged_json(self, kernel, errors, deterministic):
        s = self.spec
        return {"kernel": kernel, "mechanism": s["mechanism"], "dtype": s["dtype"], "shape": s["shape"], "seed": s["seed"],
                "knobs": self.info["knobs"], "origin": s["origin"], "pass": False, "deterministic": deterministic, "errors": errors,
                "outputs": [], "worst_ratio": None, "reproduce": "", "oracle_method": ""}


def _fixture_files(paths):
    """The larc fixtures under files and folders: every *.safetensors but the candidates saved beside
    failures (NAME.candidate.safetensors), sorted per folder; a path that does not exist is refused."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths or [])
    out = []
    for p in map(os.fspath, paths):
        _require(os.path.exists(p), "fixtures", f"{p}: no such file or directory")
        if not os.path.isdir(p):
            out.append(p)
            continue
        found = [os.path.join(d, f) for d, _, files in os.walk(p) for f in files
                 if f.endswith(".safetensors") and not f.endswith(".candidate.safetensors")]
        out += sorted(found)
    return out


def _plan(options):
    """liblarc's plan of cases for cases()'s options: their specs."""
    return _native.take_json(_native.lib().larc_plan_json(_native.encode(options)))["cases"]


def _nothing_to_run(options, given):
    """The ValueError for a selection that leaves no case, in cases()'s terms (liblarc's names the CLI's
    options): the arguments given that narrow it (`given`, by name) and the shapes the grid offers a
    kernel that takes every shape."""
    offered = []
    if options["grid"]:
        unlimited = dict(options, limits={"value_head_groups": True, "ragged": True}, initial_state=True, random=0,
                         fixtures=[])
        try:
            offered = list(dict.fromkeys(tuple(int(x) for x in c["shape"].split(",")) for c in _plan(unlimited)))
        except ValueError:  # the grid offers nothing even without limits
            pass
    if offered:
        grid = (f"the grid offers a kernel of any size that groups value heads (limits={{'value_head_groups': True}}) "
                f"the shapes (B, T, H, K, V[, HV]) {', '.join(map(str, offered))}"
                + ("; give shapes= that the limits accept" if "limits" in given and "shapes" not in given else ""))
    else:
        grid = "the grid is off" if not options["grid"] else "the grid offers none of these shapes, dtypes and knobs"
    selection = ", ".join(f"{k}={v!r}" for k, v in given.items())
    return ValueError(f"{', '.join(given) or 'mechanism'}: nothing to run: no case of {options['mechanism']} meets "
                      f"{selection or 'the default selection'}; {grid}")


def cases(mechanism_name, dtypes=None, shapes=None, random=0, seed=1, knobs=None, fixtures=None, limits=None,
          initial_state=True, grid=True, grad=False):
    """larc's cases for a kernel of `mechanism_name`: the gate's grid (the default shapes, or `shapes`),
    `random` randomized cases drawn from `seed`, and the fixtures under `fixtures`, restricted to the
    kernel's dtypes and shape limits ({"max_T": ..., "head_dims": [...], ...}). Cases are prepared on
    first use. grad=True: the gradient cases (the mechanism's gradient twin's)."""
    _require(isinstance(grad, bool), "grad", f"expected True or False, got {grad!r}")
    # The arguments given that narrow the selection, named when it leaves nothing.
    given = {k: v for k, v in (("dtypes", dtypes), ("shapes", shapes), ("knobs", knobs), ("fixtures", fixtures),
                               ("limits", limits)) if v}
    given |= {k: v for k, v in (("initial_state", initial_state), ("grid", grid)) if not v}
    if grad:
        mechanism_name = _twin_of(mechanism_name)
    if _is_twin(_mechanism_spec(mechanism_name)):
        _require(initial_state, "initial_state", "gradient cases need a kernel that takes an initial state: their "
                 "dh0 is the gradient with respect to it (at a zero state when the case has none)")
    dtypes = list(dtypes) if dtypes is not None else ["bf16", "fp16", "fp32"]
    for d in dtypes:
        _check_dtype(d, "dtypes")
    _require(isinstance(random, int) and random >= 0, "random", f"expected an integer of at least 0, got {random!r}")
    _require(isinstance(seed, int) and 0 <= seed < 2 ** 64, "seed", f"expected an integer in [0, 2^64), got {seed!r}")
    _require(isinstance(limits or {}, dict), "limits", f"expected a dict such as {{'head_dims': [64, 128]}}, got {limits!r}")
    options = {"mechanism": mechanism_name, "dtypes": dtypes, "grid": bool(grid), "seed": int(seed), "random": random,
               "knobs": dict(knobs or {}), "limits": dict(limits or {}), "initial_state": bool(initial_state),
               "shapes": [",".join(map(str, _check_shape(s, "shapes"))) for s in (shapes or [])],
               "fixtures": _fixture_files(fixtures)}
    try:
        planned = _plan(options)
    except ValueError as e:
        if not str(e).startswith("nothing to run"):
            raise
        raise _nothing_to_run(options, given) from None
    out, seen, n_random = [], set(), 0
    for spec in planned:
        case = Case(spec)
        case.limits = dict(limits or {})
        if spec["origin"] == "random":
            case.id = f"random{n_random}-{case.id}"
            n_random += 1
        elif spec["origin"] != "grid":
            case.id = f"fixture:{os.path.basename(spec['origin']).removesuffix('.safetensors')}"
        while case.id in seen:
            case.id += "+"
        seen.add(case.id)
        out.append(case)
    return out


def gate(fn, mechanism, dtype="fp32", shape=DEFAULT_SHAPE, seed=1, knobs=None, grade="fp32", device=None, runs=2,
         grade_of=None, kernel=None, save_dir=None, profile=None, grad=False, shrink=None):
    """Generates one case, runs `fn` on it and judges it; raises GateFailure (an AssertionError) with
    the worst timesteps, each output's ratio at its grade, the saved fixture and the replay command,
    then the same for the smallest case that still fails (shrink: Case.run).
    grad=True: the gradient case (the mechanism's gradient twin's; Case.run says what fn is then)."""
    _require(callable(fn), "fn", f"expected a callable, got {type(fn).__name__}")
    _require(isinstance(grad, bool), "grad", f"expected True or False, got {grad!r}")
    _parse_device(device)  # before the case is prepared: its oracle is the costly part
    case = Case.prepare(_twin_of(mechanism) if grad else mechanism, dtype=dtype, shape=shape, seed=seed, knobs=knobs)
    return case.gate(fn, device=device, grade=grade, grade_of=grade_of, runs=runs, kernel=kernel, save_dir=save_dir,
                     profile=profile, shrink=shrink)


def _bf16_bits(values):
    """float32 values rounded to bf16 (to nearest, ties to even), as bit patterns."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def check(mechanism_name, inputs, outputs, dtype=None, grade="fp32", grade_of=None, kernel="check", save_dir=None):
    """Judges `outputs` computed from your `inputs` (numpy arrays or torch tensors in FLA's layout)
    against larc's oracle of those inputs; raises GateFailure when they fail, returns the Result."""
    m = _mechanism_spec(mechanism_name)
    _require(isinstance(inputs, dict) and "q" in inputs, "inputs", "expected a dict of the mechanism's inputs by name")
    dtype = dtype or _arrays.larc_dtype_of(inputs["q"])
    _check_dtype(dtype)
    grade_of_list = _check_grades(grade, grade_of, [o["name"] for o in m["outputs"]])
    fp32_inputs = {i["name"] for i in m["inputs"] if i["always_fp32"]}
    host = []
    for name, x in inputs.items():
        want = "fp32" if name in fp32_inputs else dtype
        got, a = _arrays.host_raw(x, want)
        if want == "bf16" and got == "fp32":  # numpy has no bf16: float32 values rounded to bf16
            got, a = "bf16", _bf16_bits(a)
        host.append((name, got, a))
    arr, keep = _native.tensor_array(host)
    spec = {"mechanism": mechanism_name, "dtype": dtype}
    handle = _native.checked(_native.lib().larc_case_from_inputs(_native.encode(spec), arr, len(host)))
    del keep
    info = _native.take_json(_native.lib().larc_case_json(handle))
    case = Case({k: info[k] for k in ("mechanism", "dtype", "shape", "seed", "knobs", "origin")}, "inputs", handle)
    if not isinstance(outputs, dict):
        outputs = {"o": outputs} if not isinstance(outputs, (tuple, list)) else dict(zip([o["name"] for o in m["outputs"]], outputs))
    given = [(n, *_arrays.host_raw(x, dtype)) for n, x in outputs.items() if x is not None]
    arr, keep = _native.tensor_array(given)
    config = {"kernel": kernel, "grade": grade, "grade_of": grade_of_list}
    handle = _native.checked(_native.lib().larc_judge(case.handle, arr, len(given), _native.encode(config)))
    del keep
    result = Result(case, kernel, _native.take_json(_native.lib().larc_result_json(handle)), handle)
    result.json["rerun"], result.json["reproduce"] = _pytest_rerun(), ""  # no callable to rerun outside pytest
    if not result.passed:
        fixture, candidate = case._failure_paths(kernel, save_dir)
        result.fixture = case.save(fixture, {"subject": kernel, "failure": (result.errors or ["failed"])[0]})
        case._write_candidate(candidate, given, kernel)
        result.candidate = candidate
        result.json["reproduce"] = " ".join(["larc", "diff", shlex.quote(fixture), shlex.quote(candidate), "--grade", grade] +
                                            [a for g in grade_of_list for a in ("--grade-of", g)])
        result.json["fixture"], result.json["candidate"] = result.fixture, result.candidate
    _collect(result)
    return result.assert_pass()


def record_profile(results, path):
    """Writes an accuracy-regression profile of judged results (docs/gate.md); later runs compare
    against it with run(..., profile=path)."""
    handles = [r._handle for r in results if r._handle]
    _require(len(handles) == len(results), "results", "every result must have been judged (none failed before judging)")
    arr = (ctypes.c_void_p * max(1, len(handles)))(*handles)
    _native.check_status(_native.lib().larc_profile_record(arr, len(handles), os.fspath(path).encode()))
    return path
