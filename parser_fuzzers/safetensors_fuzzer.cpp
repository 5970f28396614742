// libFuzzer target: the safetensors reader (fixtures/safetensors.h) on any bytes as a whole file.
// Every input either parses or throws FixtureError. A file that parses decodes element by element
// (to_doubles / to_int64s, require_finite) with no error but FixtureError, and re-serialised by the
// writer it parses back to the same tensors and metadata.
#include <cstddef>
#include <cstdint>
#include <span>

#include "larc/fixtures/safetensors.h"

namespace fx = larc::fixtures;

namespace {
bool same(const fx::SafetensorsFile& a, const fx::SafetensorsFile& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (const auto& [name, t] : a.tensors) {
    const auto it = b.tensors.find(name);
    if (it == b.tensors.end() || it->second.dtype != t.dtype || it->second.shape != t.shape || it->second.bytes != t.bytes)
      return false;
  }
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fx::SafetensorsFile file;
  try {
    file = fx::parse_safetensors(std::as_bytes(std::span(data, size)), "fuzz.safetensors");
  } catch (const fx::FixtureError&) {
    return 0;
  }
  for (const auto& [name, t] : file.tensors) {
    try {
      if (larc::is_floating(t.dtype)) {
        t.to_doubles(name);
        fx::require_finite(t, name);
      } else {
        t.to_int64s(name);
      }
    } catch (const fx::FixtureError&) {
    }
  }
  const fx::SafetensorsFile again = fx::parse_safetensors(fx::serialize_safetensors(file), "reserialized.safetensors");
  if (!same(file, again)) __builtin_trap();
  return 0;
}
