// Building safetensors files byte by byte for the fixture-format tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace larc::fixtures::testing {

inline void append(std::vector<std::byte>& out, const std::vector<std::uint8_t>& raw) {
  for (std::uint8_t b : raw) out.push_back(static_cast<std::byte>(b));
}

// 8-byte little-endian header length, the header text as given (no padding added), then `data`.
inline std::vector<std::byte> file_with_header(const std::string& header, const std::vector<std::uint8_t>& data) {
  std::vector<std::byte> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((header.size() >> (8 * i)) & 0xff));
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  append(out, data);
  return out;
}

}  // namespace larc::fixtures::testing
