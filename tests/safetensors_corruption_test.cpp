// Malformed safetensors files: every kind of corruption gives a FixtureError whose message names the
// file, the tensor where there is one, and the problem; truncations, flipped header bits and random
// byte corruption never crash and never throw anything else.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <random>

#include "larc/fixtures/safetensors.h"
#include "safetensors_test_bytes.h"

namespace {
using larc::fixtures::DType;
using larc::fixtures::FixtureError;
using larc::fixtures::SafetensorsFile;
using larc::fixtures::TensorData;
using larc::fixtures::testing::file_with_header;

std::string parse_error(const std::vector<std::byte>& bytes) {
  try {
    larc::fixtures::parse_safetensors(bytes, "bad.safetensors");
  } catch (const FixtureError& e) {
    return e.what();
  }
  return "(parsed without error)";
}

std::string parse_error(const std::string& header, const std::vector<std::uint8_t>& data) {
  return parse_error(file_with_header(header, data));
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << "message: " << (text)

TEST(SafetensorsCorruption, FileShorterThanTheHeaderLength) {
  const std::vector<std::byte> five(5);
  EXPECT_EQ(parse_error(five), "bad.safetensors: file too short: 5 bytes, fewer than the 8-byte header length");
  EXPECT_CONTAINS(parse_error(std::vector<std::byte>{}), "file too short: 0 bytes");
}

TEST(SafetensorsCorruption, HeaderLengthLargerThanTheFile) {
  std::vector<std::byte> bytes = file_with_header("{}", {});
  bytes[0] = std::byte{3};  // claims 3 header bytes, 2 follow
  EXPECT_EQ(parse_error(bytes), "bad.safetensors: header length 3 (the first 8 bytes) is larger than the 2 bytes that follow them");
  bytes[7] = std::byte{0xff};  // ~2^63: no overflow in the comparison
  EXPECT_CONTAINS(parse_error(bytes), "is larger than the 2 bytes that follow them");
}

TEST(SafetensorsCorruption, HeaderNotJson) {
  EXPECT_CONTAINS(parse_error(R"({"a": })", {}), "bad.safetensors: header is not valid JSON");
  EXPECT_CONTAINS(parse_error(R"({"a":1,})", {}), "header is not valid JSON");
  EXPECT_CONTAINS(parse_error(std::string("{\"\xff\":1}"), {}), "header is not valid JSON");  // not UTF-8
}

TEST(SafetensorsCorruption, HeaderNotAnObject) {
  EXPECT_EQ(parse_error("[1, 2]", {}), "bad.safetensors: header is not a JSON object: it does not begin with '{'");
  EXPECT_CONTAINS(parse_error(" {}", {}), "does not begin with '{'");
  EXPECT_CONTAINS(parse_error("", {}), "does not begin with '{'");
}

TEST(SafetensorsCorruption, PaddingOtherThanSpaces) {
  EXPECT_EQ(parse_error("{}\n", {}), "bad.safetensors: header must end with '}' followed only by space (0x20) padding");
  EXPECT_CONTAINS(parse_error(std::string("{}\0\0", 4), {}), "followed only by space (0x20) padding");
  EXPECT_EQ(parse_error("{}      ", {}), "(parsed without error)");
}

TEST(SafetensorsCorruption, UnknownDtype) {
  EXPECT_EQ(parse_error(R"({"q":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", {0}),
            "bad.safetensors: tensor 'q': unknown dtype \"F8_E4M3\" (larc reads F64, F32, F16, BF16, I64, I32, U8, BOOL)");
  EXPECT_CONTAINS(parse_error(R"({"q":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", {0, 0, 0, 0}),
                  "tensor 'q': dtype must be a string");
}

TEST(SafetensorsCorruption, BadShape) {
  EXPECT_CONTAINS(parse_error(R"({"k":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,0]}})", {}),
                  "tensor 'k': bad shape [2,-1]: -1 is not a non-negative integer");
  EXPECT_CONTAINS(parse_error(R"({"k":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", std::vector<std::uint8_t>(8)),
                  "tensor 'k': bad shape [2.0]");
  EXPECT_CONTAINS(parse_error(R"({"k":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})", std::vector<std::uint8_t>(8)),
                  "tensor 'k': bad shape: expected an array");
  EXPECT_CONTAINS(parse_error(R"({"k":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", {}),
                  "tensor 'k': bad shape [4294967296,4294967296]: its size in bytes overflows 64 bits");
}

TEST(SafetensorsCorruption, MissingAndUnknownFields) {
  EXPECT_EQ(parse_error(R"({"v":{"dtype":"F32","shape":[1]}})", {}), "bad.safetensors: tensor 'v': missing \"data_offsets\"");
  EXPECT_CONTAINS(parse_error(R"({"v":{"dtype":"F32","shape":[0],"data_offsets":[0,0],"data_offset":[0,0]}})", {}),
                  "tensor 'v': unknown field \"data_offset\"");
  EXPECT_CONTAINS(parse_error(R"({"v":[1,2]})", {}), "tensor 'v': expected {\"dtype\", \"shape\", \"data_offsets\"}");
}

TEST(SafetensorsCorruption, OffsetsOfTheWrongLength) {
  EXPECT_EQ(parse_error(R"({"v":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", {0, 0, 0, 0}),
            "bad.safetensors: tensor 'v': data_offsets [0, 4] hold 4 bytes but shape [2] of F32 needs 8 (numel × element size)");
  EXPECT_CONTAINS(parse_error(R"({"v":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", {0, 0, 0, 0}),
                  "tensor 'v': data_offsets [4, 0]: END is before BEGIN");
  EXPECT_CONTAINS(parse_error(R"({"v":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", {0, 0, 0, 0}),
                  "tensor 'v': data_offsets must be [BEGIN, END]");
  EXPECT_CONTAINS(parse_error(R"({"v":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", {0, 0, 0, 0}),
                  "tensor 'v': bad data_offsets");
}

TEST(SafetensorsCorruption, OffsetsOutOfRange) {
  EXPECT_EQ(parse_error(R"({"v":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", {0, 0, 0, 0}),
            "bad.safetensors: tensor 'v': data truncated: data_offsets [0, 8] reach past the end of the byte buffer "
            "(4 bytes after the header; the file has 66 bytes)");
}

TEST(SafetensorsCorruption, OverlappingTensors) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  EXPECT_EQ(parse_error(header, std::vector<std::uint8_t>(12)),
            "bad.safetensors: tensor 'b': data_offsets [4, 12] overlap tensor 'a' data_offsets [0, 8]");
}

TEST(SafetensorsCorruption, TensorsNotCoveringTheBuffer) {
  const std::string gap = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
  EXPECT_EQ(parse_error(gap, std::vector<std::uint8_t>(12)),
            "bad.safetensors: tensor 'b': data_offsets [8, 12] leave bytes [4, 8) of the byte buffer to no tensor "
            "(after tensor 'a'); the tensors must cover the buffer without holes");
  EXPECT_CONTAINS(parse_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::vector<std::uint8_t>(8)),
                  "leave bytes [0, 4) of the byte buffer to no tensor (at its start)");
  EXPECT_EQ(parse_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", std::vector<std::uint8_t>(7)),
            "bad.safetensors: the tensors cover 4 bytes of the 7-byte buffer: 3 trailing bytes belong to no tensor "
            "(the buffer must be covered exactly)");
}

TEST(SafetensorsCorruption, DuplicateNames) {
  const std::string header = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})";
  EXPECT_EQ(parse_error(header, {1, 2}), "bad.safetensors: header: duplicate tensor name 'a'");
  EXPECT_CONTAINS(parse_error(R"({"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})", {1}),
                  "duplicate key 'dtype' inside an entry");
  EXPECT_CONTAINS(parse_error(R"({"__metadata__":{"k":"1","k":"2"}})", {}), "duplicate key 'k'");
}

TEST(SafetensorsCorruption, NonStringMetadata) {
  EXPECT_EQ(parse_error(R"({"__metadata__":{"seed":42}})", {}),
            "bad.safetensors: header: \"__metadata__\" value of 'seed' must be a string, got number 42");
  EXPECT_CONTAINS(parse_error(R"({"__metadata__":["x"]})", {}), "\"__metadata__\" must be an object of strings, got array");
}

// A valid fixture-like file: several dtypes and metadata.
std::vector<std::byte> sample_file() {
  SafetensorsFile f;
  f.metadata = {{"mechanism", "gdn"}, {"seed", "7"}};
  std::vector<double> ramp(24);
  for (std::size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<double>(i) - 11.5;
  f.tensors["q"] = TensorData::from_doubles(DType::BF16, {1, 4, 2, 3}, ramp);
  f.tensors["o"] = TensorData::from_doubles(DType::F64, {1, 4, 2, 3}, ramp);
  f.tensors["g"] = TensorData::from_doubles(DType::F32, {1, 4, 2}, std::vector<double>(8, -0.25));
  f.tensors["m"] = TensorData::from_doubles(DType::F16, {2}, std::vector<double>{1.0, 2.0});
  f.tensors["n"] = TensorData::from_doubles(DType::I64, {1}, std::vector<double>{3.0});
  return larc::fixtures::serialize_safetensors(f);
}

// Parsing must either succeed or throw FixtureError; what parses must decode and re-serialize.
void expect_clean_outcome(const std::vector<std::byte>& bytes, const std::string& what) {
  try {
    const SafetensorsFile f = larc::fixtures::parse_safetensors(bytes, "fuzzed");
    for (const auto& [name, t] : f.tensors) {
      try {
        (void)t.to_doubles(name);
      } catch (const FixtureError&) {  // e.g. a BOOL byte other than 0/1
      }
    }
    const SafetensorsFile again = larc::fixtures::parse_safetensors(larc::fixtures::serialize_safetensors(f), "again");
    ASSERT_EQ(again.tensors.size(), f.tensors.size()) << what;
    ASSERT_EQ(again.metadata, f.metadata) << what;
  } catch (const FixtureError& e) {
    ASSERT_EQ(std::string(e.what()).rfind("fuzzed: ", 0), 0u) << what << ": " << e.what();
  } catch (const std::exception& e) {
    FAIL() << what << ": threw something other than FixtureError: " << e.what();
  }
}

TEST(SafetensorsCorruption, EveryTruncationIsRefused) {
  const std::vector<std::byte> full = sample_file();
  ASSERT_NO_THROW(larc::fixtures::parse_safetensors(full, "full"));
  for (std::size_t n = 0; n < full.size(); ++n) {
    const std::vector<std::byte> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    const std::string message = parse_error(cut);
    ASSERT_EQ(message.rfind("bad.safetensors: ", 0), 0u) << "truncated to " << n << " bytes: " << message;
  }
  // Cut inside the data: the message says so and names the tensor whose data is missing.
  const std::vector<std::byte> cut(full.begin(), full.end() - 3);
  EXPECT_CONTAINS(parse_error(cut), "data truncated: data_offsets");
}

TEST(SafetensorsCorruption, EveryFlippedHeaderBitIsHandled) {
  const std::vector<std::byte> full = sample_file();
  std::uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | std::to_integer<std::uint64_t>(full[i]);
  int refused = 0;
  for (std::size_t i = 0; i < 8 + header_bytes; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<std::byte> flipped = full;
      flipped[i] ^= std::byte{static_cast<unsigned char>(1u << bit)};
      expect_clean_outcome(flipped, "byte " + std::to_string(i) + " bit " + std::to_string(bit));
      if (parse_error(flipped).rfind("bad.safetensors: ", 0) == 0) ++refused;
    }
  }
  // Most single-bit flips of a header break it; the few that survive rename a tensor or metadata key.
  EXPECT_GT(refused, static_cast<int>(8 * (8 + header_bytes) * 9 / 10));
}

// Seed and iteration count are printed and settable: LARC_FUZZ_SEED, LARC_FUZZ_ITERATIONS.
std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

TEST(SafetensorsCorruption, RandomByteCorruptionNeverCrashes) {
  const std::vector<std::byte> full = sample_file();
  const std::uint64_t seed = env_or("LARC_FUZZ_SEED", 6);
  const auto iterations = static_cast<int>(env_or("LARC_FUZZ_ITERATIONS", 4000));
  RecordProperty("seed", std::to_string(seed));
  RecordProperty("iterations", std::to_string(iterations));
  SCOPED_TRACE("LARC_FUZZ_SEED=" + std::to_string(seed) + " LARC_FUZZ_ITERATIONS=" + std::to_string(iterations));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> position(0, full.size() - 1);
  std::uniform_int_distribution<int> byte_value(0, 255), count(1, 8);
  for (int it = 0; it < iterations; ++it) {
    std::vector<std::byte> bytes = full;
    const int changes = count(rng);
    for (int c = 0; c < changes; ++c) bytes[position(rng)] = static_cast<std::byte>(byte_value(rng));
    if (it % 4 == 0) bytes.resize(position(rng));  // and sometimes truncated too
    expect_clean_outcome(bytes, "iteration " + std::to_string(it));
    if (HasFatalFailure()) return;
  }
}

}  // namespace
