// libFuzzer target: fixture validation (harness/fixture.h, parse_fixture) and the judging of what it
// accepts. An input is a safetensors file without its 8-byte length: the JSON header, a NUL byte, then
// the byte buffer (the target writes the length itself, so mutations that grow or shrink the header
// still reach the JSON and the fixture layout). Every input either gives a FixtureError or a prepared
// case whose own oracle, judged as a kernel's output (judge_candidate), gets a verdict without an
// exception, and a failing verdict names its violations.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "larc/fixtures/safetensors.h"
#include "larc/harness/fixture.h"
#include "larc/harness/runner.h"

namespace fx = larc::fixtures;
namespace h = larc::harness;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::uint8_t* end = data + size;
  const std::uint8_t* nul = std::find(data, end, std::uint8_t{0});
  if (nul == end) return 0;
  const std::uint64_t header = static_cast<std::uint64_t>(nul - data);
  std::vector<std::byte> file(8);
  for (int i = 0; i < 8; ++i) file[i] = static_cast<std::byte>((header >> (8 * i)) & 0xff);
  file.insert(file.end(), reinterpret_cast<const std::byte*>(data), reinterpret_cast<const std::byte*>(nul));
  file.insert(file.end(), reinterpret_cast<const std::byte*>(nul + 1), reinterpret_cast<const std::byte*>(end));

  h::PreparedCase prepared;
  try {
    prepared = h::parse_fixture(fx::parse_safetensors(file, "fuzz.safetensors"));
  } catch (const fx::FixtureError&) {
    return 0;
  }
  h::TensorMap candidate;
  for (const auto& [name, values] : prepared.oracle)
    candidate.emplace(name, h::TypedTensor::encode(h::Dtype::fp64, values));
  const h::CaseResult r = h::judge_candidate(prepared, candidate);
  if (!r.pass && r.errors.empty()) __builtin_trap();
  return 0;
}
