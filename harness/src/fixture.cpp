#include "larc/harness/fixture.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace larc::harness {

namespace fx = larc::fixtures;

namespace {
TypedTensor typed_of(const fx::TensorData& t) {
  if (!is_floating(t.dtype)) throw fx::FixtureError("not a float tensor");
  return TypedTensor::from_bytes(t.dtype, t.shape, t.bytes.data(), t.bytes.size());
}

fx::TensorData file_tensor(const TypedTensor& t) {
  fx::TensorData d;
  d.dtype = t.dtype();
  d.shape = t.shape();
  d.bytes.assign(t.data(), t.data() + t.size_bytes());
  return d;
}

fx::TensorData f64_tensor(std::vector<std::int64_t> shape, const std::vector<double>& values) {
  return fx::TensorData::from_doubles(fx::Dtype::fp64, std::move(shape), values);
}

ref::Tensor<double> values_of(const fx::TensorData& t, const std::string& name) {
  ref::Tensor<double> r;
  r.shape = t.shape;
  r.data = t.to_doubles(name);
  return r;
}

std::string meta(const fx::SafetensorsFile& f, const std::string& key) {
  const auto it = f.metadata.find(key);
  if (it == f.metadata.end())
    throw fx::FixtureError(f.source + ": __metadata__ lacks \"" + key + "\" (a larc fixture has format " + kFixtureFormat + ")");
  return it->second;
}

std::uint64_t parse_seed(const fx::SafetensorsFile& f) {
  const std::string s = meta(f, "seed");
  if (s.empty() || s.size() > 20 || s.find_first_not_of("0123456789") != std::string::npos)
    throw fx::FixtureError(f.source + ": __metadata__ seed: expected a whole number, got '" + s + "'");
  try {
    return std::stoull(s);
  } catch (const std::exception&) {
    throw fx::FixtureError(f.source + ": __metadata__ seed: out of range: '" + s + "'");
  }
}
}  // namespace

std::string larc_version() { return LARC_VERSION; }

void write_fixture(const std::filesystem::path& path, const PreparedCase& p, const std::map<std::string, std::string>& extra) {
  const Mechanism& m = find_mechanism(p.spec.mechanism);
  fx::SafetensorsFile f;
  for (const TensorSpec& in : m.inputs)
    if (const auto t = p.inputs.find(in.name); t != p.inputs.end()) f.tensors.emplace(in.name, file_tensor(t->second));
  for (const TensorSpec& out : m.outputs) {
    if (out.optional && !p.oracle.count(out.name)) continue;
    const ref::Tensor<double>& o = p.oracle.at(out.name);
    f.tensors.emplace("oracle." + out.name, f64_tensor(o.shape, o.data));
    const std::vector<double>& e = p.oracle_error.at(out.name);
    f.tensors.emplace("oracle_error." + out.name, f64_tensor({static_cast<std::int64_t>(e.size())}, e));
  }
  nlohmann::json knobs(p.spec.knobs);
  f.metadata = {{"format", kFixtureFormat},
                {"mechanism", m.name},
                {"dtype", std::string(ref::dtype_name(p.spec.dtype))},
                {"shape", p.spec.shape.str()},
                {"seed", std::to_string(p.spec.seed)},
                {"knobs", knobs.dump()},
                {"parameters", m.parameters.dump()},
                {"oracle_precision", "dd_real (double-double, ~106 bits), serial form"},
                {"oracle_error_method", p.oracle_method},
                {"larc_version", larc_version()},
                {"origin", p.spec.origin}};
  for (const auto& [k, v] : extra) f.metadata[k] = v;
  fx::write_safetensors(path, f);
}

PreparedCase read_fixture(const std::filesystem::path& path) { return parse_fixture(fx::read_safetensors(path)); }

PreparedCase parse_fixture(const fx::SafetensorsFile& f) {
  const std::string& src = f.source;
  if (meta(f, "format") != kFixtureFormat) {
    const auto by = f.metadata.find("larc_version");
    throw fx::FixtureError(src + ": __metadata__ format is '" + meta(f, "format") + "' (written by larc " +
                           (by == f.metadata.end() ? std::string("of unknown version") : by->second) + "), this larc " +
                           larc_version() + " reads '" + kFixtureFormat + "'");
  }
  PreparedCase p;
  const Mechanism* m = nullptr;
  try {
    m = &find_mechanism(meta(f, "mechanism"));
    p.spec.dtype = parse_dtype(meta(f, "dtype"));
    p.spec.shape = Shape::parse(meta(f, "shape"));
    p.spec.knobs = m->resolve_knobs(nlohmann::json::parse(meta(f, "knobs")).get<KnobValues>());
  } catch (const fx::FixtureError&) {
    throw;
  } catch (const std::exception& e) {
    throw fx::FixtureError(src + ": __metadata__: " + e.what());
  }
  p.spec.mechanism = m->name;
  p.spec.seed = parse_seed(f);
  p.spec.origin = src;
  p.spec.subject.clear();
  const Dtype want = p.spec.dtype;
  const auto require_finite = [&](const fx::TensorData& t, const std::string& name, bool minus_infinity = false) {
    try {
      fx::require_finite(t, name, minus_infinity);
    } catch (const fx::FixtureError& e) {
      throw fx::FixtureError(src + ": " + e.what());
    }
  };
  for (const TensorSpec& in : m->inputs)  // the level count L of a case continuing a sequence (Shape::L)
    if (const auto l = in.dims.find('L'); l != std::string::npos && f.tensors.count(in.name) &&
                                          f.tensors.at(in.name).shape.size() == in.dims.size())
      p.spec.shape.L = f.tensors.at(in.name).shape[l];
  for (const TensorSpec& in : m->inputs) {
    if (in.optional && !f.tensors.count(in.name)) continue;
    const fx::TensorData& t =
        fx::require_tensor(f, in.name, {in.always_fp32 ? fx::Dtype::fp32 : want}, dims_of(in.dims, p.spec.shape));
    require_finite(t, in.name, in.minus_infinity);
    p.inputs.emplace(in.name, typed_of(t));
  }
  try {
    m->shape_of(decode_all(p.inputs));  // values within each input's range (β in [0, 1], g ≤ 0, ...)
  } catch (const std::invalid_argument& e) {
    throw fx::FixtureError(src + ": " + e.what());
  }
  for (const TensorSpec& out : m->outputs) {
    const std::string oname = "oracle." + out.name, ename = "oracle_error." + out.name;
    if (out.optional && !f.tensors.count(oname)) continue;
    const auto dims = dims_of(out.dims, p.spec.shape);
    const fx::TensorData& o = fx::require_tensor(f, oname, {fx::Dtype::fp64}, dims);
    require_finite(o, oname);
    p.oracle.emplace(out.name, values_of(o, oname));
    const int axis = m->time_axis(out.name);
    std::int64_t slices = axis < 0 ? 1 : dims[static_cast<std::size_t>(axis)];
    for (int i = 0; axis < 0 && i < m->leading_slice_axes(out.name); ++i) slices *= dims[static_cast<std::size_t>(i)];
    const fx::TensorData& e = fx::require_tensor(f, ename, {fx::Dtype::fp64}, {slices});
    require_finite(e, ename);
    p.oracle_error.emplace(out.name, e.to_doubles(ename));
    for (double x : p.oracle_error[out.name])
      if (x < 0) throw fx::FixtureError(src + ": tensor '" + ename + "' holds a negative error bound");
  }
  p.oracle_method = meta(f, "oracle_error_method");
  return p;
}

std::vector<std::filesystem::path> fixture_files(const std::vector<std::string>& paths) {
  std::vector<std::filesystem::path> out;
  for (const std::string& p : paths) {
    const std::filesystem::path path(p);
    if (std::filesystem::is_directory(path)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(path))
        if (e.is_regular_file() && e.path().extension() == ".safetensors") out.push_back(e.path());
    } else if (std::filesystem::exists(path)) {
      out.push_back(path);
    } else {
      throw fx::FixtureError(p + ": no such file or directory");
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TensorMap read_candidate(const std::filesystem::path& path) {
  const fx::SafetensorsFile f = fx::read_safetensors(path);
  TensorMap out;
  for (const auto& [name, t] : f.tensors)
    if (larc::is_floating(t.dtype)) out.emplace(name, typed_of(t));
  return out;
}

}  // namespace larc::harness
