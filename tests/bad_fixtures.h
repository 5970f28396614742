// Fixtures that are valid safetensors files but not valid larc fixtures, each with the message that
// must refuse it (naming the field). Shared by bad_input_api_test (parse_fixture, in memory) and
// bad_fixture_writer (files for the `larc gate/diff --fixtures` rows of tests/cli/bad_input_matrix.cmake).
#pragma once

#include <filesystem>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "larc/fixtures/safetensors.h"
#include "larc/harness/fixture.h"
#include "larc/harness/runner.h"

namespace larc::testing {

namespace fx = larc::fixtures;
namespace h = larc::harness;

struct BadFixture {
  std::string name;     // file stem and test row
  std::string message;  // a regular expression the refusal must match
  std::function<void(fx::SafetensorsFile&)> corrupt;
};
// GoogleTest prints a row by its name (not its bytes) in test listings and CTest's output.
inline void PrintTo(const BadFixture& f, std::ostream* os) { *os << f.name; }

// A small fp32 GDN fixture [1, 5, 1, 2, 2], written to `dir` and read back as safetensors.
inline fx::SafetensorsFile good_fixture(const std::filesystem::path& dir) {
  h::CaseSpec spec;
  spec.mechanism = "gdn";
  spec.dtype = h::Dtype::fp32;
  spec.shape = {1, 5, 1, 2, 2};
  spec.seed = 3;
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / "good.safetensors";
  h::write_fixture(path, h::prepare_case(spec));
  return fx::read_safetensors(path);
}

// Sets element `i` of tensor `name` to `value` (the tensor's dtype must hold it exactly).
inline void set_value(fx::SafetensorsFile& f, const std::string& name, std::size_t i, double value) {
  fx::TensorData& t = f.tensors.at(name);
  std::vector<double> v = t.to_doubles(name);
  v.at(i) = value;
  t = fx::TensorData::from_doubles(t.dtype, t.shape, v);
}

// The refusal a row must get (a regular expression that ECMAScript and CMake read alike), naming the
// file: "<row>.safetensors: ... <message>".
inline std::string refusal(const BadFixture& row) { return row.name + "\\.safetensors: .*" + row.message; }

inline const std::vector<BadFixture>& bad_fixtures() {
  constexpr double inf = std::numeric_limits<double>::infinity();
  static const std::vector<BadFixture> all = {
      {"nan_input", "tensor 'q'.*(NaN|nan)", [](auto& f) { set_value(f, "q", 3, std::nan("")); }},
      {"inf_input", "tensor 'v'.*(Inf|inf)", [](auto& f) { set_value(f, "v", 0, -inf); }},
      {"beta_above_two", "input 'beta' holds 2\\.5 at flat index 2, outside \\[0, 2\\]", [](auto& f) { set_value(f, "beta", 2, 2.5); }},
      {"beta_negative", "input 'beta' holds -0\\.25", [](auto& f) { set_value(f, "beta", 0, -0.25); }},
      {"g_positive", "input 'g' holds 0\\.5 at flat index 4, outside \\[-inf, 0\\]", [](auto& f) { set_value(f, "g", 4, 0.5); }},
      {"nan_oracle", "tensor 'oracle\\.o'.*(NaN|nan)", [](auto& f) { set_value(f, "oracle.o", 1, std::nan("")); }},
      {"negative_error_bound", "'oracle_error\\.o' holds a negative error bound",
       [](auto& f) { set_value(f, "oracle_error.o", 0, -1); }},
      {"missing_input", "tensor 'beta'.*(missing|no tensor|not found|lacks)", [](auto& f) { f.tensors.erase("beta"); }},
      {"wrong_input_shape", "tensor 'k': expected F32 \\[1, 5, 1, 2\\], the file holds F32 \\[1, 5, 2, 1\\]",
       [](auto& f) {
         fx::TensorData& k = f.tensors.at("k");
         k.shape = {1, 5, 2, 1};  // same bytes, another shape
       }},
      {"other_format_version", "format is 'larc-fixture/2' \\(written by larc 9\\.0\\.0\\), this larc .* reads 'larc-fixture/1'",
       [](auto& f) {
         f.metadata["format"] = "larc-fixture/2";
         f.metadata["larc_version"] = "9.0.0";
       }},
      {"no_format", "lacks \"format\"", [](auto& f) { f.metadata.erase("format"); }},
      {"unknown_mechanism", "mechanism: unknown 'gdn2'", [](auto& f) { f.metadata["mechanism"] = "gdn2"; }},
      {"zero_length", "shape: T must be at least 1, got 0", [](auto& f) { f.metadata["shape"] = "1,0,1,2,2"; }},
      {"zero_head_dim", "shape: K must be at least 1, got 0", [](auto& f) { f.metadata["shape"] = "1,5,1,0,2"; }},
      {"bad_seed", "seed: expected a whole number, got '-3'", [](auto& f) { f.metadata["seed"] = "-3"; }},
      {"knob_out_of_range", "knob 'decay_max': expected a value in", [](auto& f) { f.metadata["knobs"] = "{\"decay_max\": 1e9}"; }},
      {"knobs_not_json", "__metadata__:.*parse", [](auto& f) { f.metadata["knobs"] = "{decay_max"; }},
  };
  return all;
}

}  // namespace larc::testing
