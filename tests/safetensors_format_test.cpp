// The safetensors layout larc writes, checked byte for byte against a file assembled by hand from the
// format's specification, and read back: round trips through files, metadata, rank-0 and empty
// tensors, any order of header entries, and the validation helpers' messages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <fstream>

#include "larc/fixtures/safetensors.h"
#include "safetensors_test_bytes.h"

namespace {
using larc::fixtures::DType;
using larc::fixtures::FixtureError;
using larc::fixtures::SafetensorsFile;
using larc::fixtures::TensorData;
using larc::fixtures::testing::file_with_header;

std::filesystem::path temp_dir() {
  // One folder per process and test: several build folders may run this test at once.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("larc_safetensors_format_test_" + std::to_string(::getpid()) + "_" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(dir);
  return dir;
}

SafetensorsFile small_file() {
  SafetensorsFile f;
  f.metadata["mechanism"] = "gdn";
  f.tensors["a"] = TensorData::from_doubles(DType::F32, {2}, std::vector<double>{1.0, -0.5});
  f.tensors["b"] = TensorData::from_doubles(DType::I64, {1}, std::vector<double>{-2.0});
  f.tensors["h"] = TensorData::from_doubles(DType::BF16, {}, std::vector<double>{1.5});
  return f;
}

// The file the specification describes for small_file(), written out by hand: tensors in the
// safetensors serializer's order (descending dtype size, then name: I64 b, F32 a, BF16 h), offsets
// contiguous from 0, compact JSON padded with spaces to 200 bytes (a multiple of 8).
std::vector<std::byte> small_file_by_hand() {
  const std::string header =
      R"({"__metadata__":{"mechanism":"gdn"},)"
      R"("b":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
      R"("h":{"dtype":"BF16","shape":[],"data_offsets":[16,18]}})"
      "  ";
  std::vector<std::byte> out;
  larc::fixtures::testing::append(out, {0xC8, 0, 0, 0, 0, 0, 0, 0});  // N = 200, little-endian u64
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  larc::fixtures::testing::append(out, {0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,  // I64 −2
                                        0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0xBF,  // F32 1.0, −0.5
                                        0xC0, 0x3F});                                    // BF16 1.5
  return out;
}

TEST(SafetensorsFormat, WriterProducesTheSpecifiedBytes) {
  const std::vector<std::byte> expected = small_file_by_hand();
  ASSERT_EQ(expected.size(), 8u + 200u + 18u);
  EXPECT_EQ(larc::fixtures::serialize_safetensors(small_file()), expected);
}

TEST(SafetensorsFormat, ReaderDecodesTheSpecifiedBytes) {
  const SafetensorsFile f = larc::fixtures::parse_safetensors(small_file_by_hand(), "by-hand");
  EXPECT_EQ(f.source, "by-hand");
  EXPECT_EQ(f.metadata, (std::map<std::string, std::string>{{"mechanism", "gdn"}}));
  ASSERT_EQ(f.tensors.size(), 3u);
  EXPECT_EQ(f.tensors.at("a").dtype, DType::F32);
  EXPECT_EQ(f.tensors.at("a").to_doubles(), (std::vector<double>{1.0, -0.5}));
  EXPECT_EQ(f.tensors.at("b").to_doubles(), (std::vector<double>{-2.0}));
  EXPECT_TRUE(f.tensors.at("h").shape.empty());
  EXPECT_EQ(f.tensors.at("h").numel(), 1);
  EXPECT_EQ(f.tensors.at("h").to_doubles(), (std::vector<double>{1.5}));
}

// Offsets need not follow the header's key order: readers sort by offset (the specification
// fixes only that the tensors tile the buffer).
TEST(SafetensorsFormat, HeaderEntriesInAnyOrderAndNoPadding) {
  const std::string header =
      R"({"z":{"dtype":"U8","shape":[2],"data_offsets":[4,6]},"y":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})";
  const SafetensorsFile f = larc::fixtures::parse_safetensors(file_with_header(header, {0x00, 0x3C, 0x00, 0xC0, 7, 9}), "x");
  EXPECT_TRUE(f.metadata.empty());
  EXPECT_EQ(f.tensors.at("y").to_doubles(), (std::vector<double>{1.0, -2.0}));
  EXPECT_EQ(f.tensors.at("z").to_doubles(), (std::vector<double>{7.0, 9.0}));
}

TEST(SafetensorsFormat, NullMetadataIsNoMetadata) {
  EXPECT_TRUE(larc::fixtures::parse_safetensors(file_with_header(R"({"__metadata__":null})", {}), "x").metadata.empty());
}

TEST(SafetensorsFormat, EmptyTensorsAndAnEmptyFile) {
  SafetensorsFile f;
  f.tensors["empty"] = TensorData{DType::F32, {0, 3}, {}};
  f.tensors["one"] = TensorData::from_doubles(DType::F64, {1}, std::vector<double>{2.0});
  const SafetensorsFile back = larc::fixtures::parse_safetensors(larc::fixtures::serialize_safetensors(f), "x");
  EXPECT_EQ(back.tensors.at("empty").shape, (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(back.tensors.at("empty").numel(), 0);
  EXPECT_EQ(back.tensors.at("one").to_doubles(), (std::vector<double>{2.0}));
  // No tensors at all: "{}" padded to 8 bytes.
  const std::vector<std::byte> nothing = larc::fixtures::serialize_safetensors(SafetensorsFile{});
  EXPECT_EQ(nothing, file_with_header("{}      ", {}));
  EXPECT_TRUE(larc::fixtures::parse_safetensors(nothing, "x").tensors.empty());
}

// A file of every dtype through the filesystem: same tensors, same metadata, byte for byte.
TEST(SafetensorsFormat, FileRoundTripOfEveryDtype) {
  SafetensorsFile f;
  f.metadata = {{"seed", "18446744073709551615"}, {"note", "ünïcødé \"quoted\"\n"}, {"empty", ""}};
  f.tensors["f64"] = TensorData::from_doubles(DType::F64, {2, 2}, std::vector<double>{1.0 / 3.0, -0.0, 1e300, -1e-300});
  f.tensors["f32"] = TensorData::from_doubles(DType::F32, {3}, std::vector<double>{0.1, -7.0, 1e30});
  f.tensors["f16"] = TensorData::from_doubles(DType::F16, {1, 2}, std::vector<double>{0.5, -0x1p-24});
  f.tensors["bf16"] = TensorData::from_doubles(DType::BF16, {2, 1}, std::vector<double>{-3.0, 0x1p-133});
  f.tensors["i64"] = TensorData::from_doubles(DType::I64, {1}, std::vector<double>{-0x1p62});
  f.tensors["i32"] = TensorData::from_doubles(DType::I32, {2}, std::vector<double>{-5.0, 6.0});
  f.tensors["u8"] = TensorData::from_doubles(DType::U8, {3}, std::vector<double>{0.0, 128.0, 255.0});
  f.tensors["bool"] = TensorData::from_doubles(DType::BOOL, {2}, std::vector<double>{1.0, 0.0});
  f.tensors["q.with/odd name é"] = TensorData::from_doubles(DType::F32, {}, std::vector<double>{4.0});
  const auto path = temp_dir() / "all.safetensors";
  larc::fixtures::write_safetensors(path, f);
  const SafetensorsFile back = larc::fixtures::read_safetensors(path);
  EXPECT_EQ(back.source, path.string());
  EXPECT_EQ(back.metadata, f.metadata);
  ASSERT_EQ(back.tensors.size(), f.tensors.size());
  for (const auto& [name, t] : f.tensors) {
    EXPECT_EQ(back.tensors.at(name).dtype, t.dtype) << name;
    EXPECT_EQ(back.tensors.at(name).shape, t.shape) << name;
    EXPECT_EQ(back.tensors.at(name).bytes, t.bytes) << name;
  }
  // The header length is a multiple of 8 and only spaces pad it.
  std::ifstream in(path, std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(raw[i]);
  EXPECT_EQ(n % 8, 0u);
  const std::string header(raw.begin() + 8, raw.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  EXPECT_EQ(header.substr(header.find_last_not_of(' ') + 1), std::string(n - header.find_last_not_of(' ') - 1, ' '));
  // Atomic write: nothing but the file itself is left in the folder.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(path.parent_path()), {}), 1);
  std::filesystem::remove_all(path.parent_path());
}

TEST(SafetensorsFormat, WriteRefusesWhatTheFormatCannotHold) {
  SafetensorsFile f;
  f.tensors["short"] = TensorData{DType::F32, {2}, std::vector<std::byte>(4)};
  EXPECT_THROW(larc::fixtures::serialize_safetensors(f), FixtureError);
  f.tensors.clear();
  f.tensors["__metadata__"] = TensorData{DType::U8, {1}, std::vector<std::byte>(1)};
  EXPECT_THROW(larc::fixtures::serialize_safetensors(f), FixtureError);
  f.tensors.clear();
  f.tensors[std::string("bad\xff utf8")] = TensorData{DType::U8, {1}, std::vector<std::byte>(1)};
  EXPECT_THROW(larc::fixtures::serialize_safetensors(f), FixtureError);
  // An unwritable path: a FixtureError naming it, and no temporary file left behind.
  const auto dir = temp_dir();
  EXPECT_THROW(larc::fixtures::write_safetensors(dir / "no" / "such" / "dir.safetensors", small_file()), FixtureError);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 0);
  std::filesystem::remove_all(dir);
}

TEST(SafetensorsFormat, ReadMissingFileNamesIt) {
  try {
    larc::fixtures::read_safetensors("/nonexistent/fixture.safetensors");
    FAIL();
  } catch (const FixtureError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/fixture.safetensors: cannot open"), std::string::npos) << e.what();
  }
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FixtureError& e) {
    return e.what();
  }
  return "(no FixtureError)";
}

TEST(SafetensorsValidate, RequireTensorNamesFileTensorAndExpectation) {
  SafetensorsFile f = small_file();
  f.source = "golden/gdn.safetensors";
  EXPECT_EQ(&larc::fixtures::require_tensor(f, "a", {DType::F32, DType::BF16}, {2}), &f.tensors.at("a"));
  EXPECT_EQ(&larc::fixtures::require_tensor(f, "a", {DType::F32}, {-1}), &f.tensors.at("a"));
  EXPECT_EQ(message_of([&] { larc::fixtures::require_tensor(f, "a", {DType::F64}, {2}); }),
            "golden/gdn.safetensors: tensor 'a': expected F64 [2], the file holds F32 [2]");
  EXPECT_EQ(message_of([&] { larc::fixtures::require_tensor(f, "a", {DType::F32, DType::BF16}, {1, -1}); }),
            "golden/gdn.safetensors: tensor 'a': expected F32 or BF16 [1, *], the file holds F32 [2]");
  EXPECT_EQ(message_of([&] { larc::fixtures::require_tensor(f, "q", {DType::F32}, {2, 3}); }),
            "golden/gdn.safetensors: tensor 'q': missing (expected F32 [2, 3]; the file holds: a, b, h)");
}

TEST(SafetensorsValidate, RequireFiniteNamesTheFirstNonFiniteElement) {
  const double inf = std::numeric_limits<double>::infinity();
  const TensorData ok = TensorData::from_doubles(DType::F16, {2, 2}, std::vector<double>{1, 2, 3, 4});
  EXPECT_NO_THROW(larc::fixtures::require_finite(ok, "k"));
  const TensorData nan = TensorData::from_doubles(DType::F32, {2, 3}, std::vector<double>{1, 2, 3, 4, std::nan(""), -inf});
  EXPECT_EQ(message_of([&] { larc::fixtures::require_finite(nan, "q"); }),
            "tensor 'q': NaN at index [1, 1] (flat 4); inputs must be finite");
  const TensorData neg = TensorData::from_doubles(DType::BF16, {3}, std::vector<double>{1, -inf, 0});
  EXPECT_EQ(message_of([&] { larc::fixtures::require_finite(neg, "g"); }),
            "tensor 'g': -Inf at index [1] (flat 1); inputs must be finite");
}

}  // namespace
