// Writes the files the command-line and Python interop tests read: sample.safetensors (every dtype,
// special values, metadata) and malformed copies of it, into the folder given as the only argument.
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>

#include "larc/fixtures/safetensors.h"

namespace fx = larc::fixtures;

namespace {
void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

fx::SafetensorsFile sample() {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  fx::SafetensorsFile f;
  f.metadata = {{"mechanism", "gdn"}, {"seed", "18446744073709551615"}, {"note", "sample for the CLI and interop tests: ü"}};
  std::vector<double> ramp(2 * 3 * 4);
  for (std::size_t i = 0; i < ramp.size(); ++i) ramp[i] = (static_cast<double>(i) - 11.0) / 8.0;  // exact in every float dtype
  f.tensors["q"] = fx::TensorData::from_doubles(fx::Dtype::bf16, {1, 2, 3, 4}, ramp);
  f.tensors["k"] = fx::TensorData::from_doubles(fx::Dtype::fp16, {1, 2, 3, 4}, ramp);
  f.tensors["v"] = fx::TensorData::from_doubles(fx::Dtype::fp32, {1, 2, 3, 4}, ramp);
  f.tensors["o"] = fx::TensorData::from_doubles(fx::Dtype::fp64, {1, 2, 3, 4}, ramp);
  f.tensors["special_f64"] = fx::TensorData::from_doubles(fx::Dtype::fp64, {6}, std::vector<double>{0.1, -0.0, 4.9e-324, inf, -inf, nan});
  f.tensors["special_f32"] = fx::TensorData::from_doubles(fx::Dtype::fp32, {4}, std::vector<double>{1e-45, -0.0, inf, nan});
  f.tensors["special_f16"] = fx::TensorData::from_doubles(fx::Dtype::fp16, {4}, std::vector<double>{0x1p-24, 65504.0, -inf, nan});
  f.tensors["special_bf16"] = fx::TensorData::from_doubles(fx::Dtype::bf16, {4}, std::vector<double>{0x1p-133, 0x1.fep127, -0.0, nan});
  f.tensors["index_i64"] = fx::TensorData::from_doubles(fx::Dtype::i64, {3}, std::vector<double>{-0x1p62, 0.0, 0x1p53});
  f.tensors["index_i32"] = fx::TensorData::from_doubles(fx::Dtype::i32, {2}, std::vector<double>{-0x1p31, 7.0});
  f.tensors["bytes_u8"] = fx::TensorData::from_doubles(fx::Dtype::u8, {2, 1}, std::vector<double>{0.0, 255.0});
  f.tensors["mask_bool"] = fx::TensorData::from_doubles(fx::Dtype::boolean, {3}, std::vector<double>{1.0, 0.0, 1.0});
  f.tensors["scalar"] = fx::TensorData::from_doubles(fx::Dtype::fp32, {}, std::vector<double>{2.0});
  f.tensors["empty"] = fx::TensorData{fx::Dtype::fp32, {0, 4}, {}};
  return f;
}

// The header's text with `from` replaced by `to` (same length, so the offsets stay right).
std::vector<std::byte> with_header_edit(std::vector<std::byte> bytes, const std::string& from, const std::string& to) {
  std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const auto at = text.find(from);
  if (at == std::string::npos || from.size() != to.size()) throw std::logic_error("header edit '" + from + "' not applicable");
  for (std::size_t i = 0; i < to.size(); ++i) bytes[at + i] = static_cast<std::byte>(to[i]);
  return bytes;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: safetensors_sample_writer FOLDER\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  const fx::SafetensorsFile f = sample();
  fx::write_safetensors(dir / "sample.safetensors", f);
  const std::vector<std::byte> bytes = fx::serialize_safetensors(f);
  write_bytes(dir / "truncated.safetensors", {bytes.begin(), bytes.end() - 5});
  write_bytes(dir / "short.safetensors", {bytes.begin(), bytes.begin() + 5});
  write_bytes(dir / "not_json.safetensors", with_header_edit(bytes, "\"dtype\":\"F16\"", "\"dtype\":'F16'"));
  write_bytes(dir / "unknown_dtype.safetensors", with_header_edit(bytes, "\"dtype\":\"F16\"", "\"dtype\":\"F8E\""));
  write_bytes(dir / "bad_offsets.safetensors", with_header_edit(bytes, "\"data_offsets\":[0,", "\"data_offsets\":[1,"));
  return 0;
}
