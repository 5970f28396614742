// Fixture dtypes: every element decodes exactly and encodes back bit for bit; BF16/F16 accept only
// values they hold exactly (values rounded by ref::round_to first), integers only whole numbers.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "larc/fixtures/safetensors.h"
#include "larc/reference/low_precision.h"

namespace {
using larc::fixtures::DType;
using larc::fixtures::FixtureError;
using larc::fixtures::TensorData;

// A 1-D tensor of every 16-bit pattern 0..65535.
TensorData all_16bit_patterns(DType d) {
  TensorData t{d, {65536}, std::vector<std::byte>(2 * 65536)};
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    std::memcpy(t.bytes.data() + 2 * b, &bits, 2);
  }
  return t;
}

// Independent oracles: a bf16 pattern is the top half of a float; GCC's _Float16 decodes IEEE half.
double bf16_oracle(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }
double f16_oracle(std::uint16_t bits) { return static_cast<double>(std::bit_cast<_Float16>(bits)); }

void expect_every_pattern_decodes_and_encodes_back(DType d, double (*oracle)(std::uint16_t)) {
  const TensorData patterns = all_16bit_patterns(d);
  const std::vector<double> values = patterns.to_doubles();
  int nan_count = 0;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const double expected = oracle(static_cast<std::uint16_t>(b));
    if (std::isnan(expected)) {
      ++nan_count;
      ASSERT_TRUE(std::isnan(values[b])) << "pattern " << b;
      ASSERT_EQ(std::signbit(values[b]), std::signbit(expected)) << "pattern " << b;
      continue;
    }
    ASSERT_EQ(values[b], expected) << "pattern " << b;
    ASSERT_EQ(std::signbit(values[b]), std::signbit(expected)) << "pattern " << b;  // −0 stays −0
  }
  EXPECT_EQ(nan_count, d == DType::BF16 ? 2 * 127 : 2 * 1023);
  // Encoding the decoded values gives back every non-NaN pattern (NaN encodes as the quiet NaN).
  const TensorData again = TensorData::from_doubles(d, {65536}, values);
  for (std::uint32_t b = 0; b < 65536; ++b) {
    std::uint16_t got;
    std::memcpy(&got, again.bytes.data() + 2 * b, 2);
    if (std::isnan(values[b])) EXPECT_TRUE(std::isnan(oracle(got))) << "pattern " << b;
    else ASSERT_EQ(got, b) << "pattern " << b;
  }
}

TEST(SafetensorsDtype, EveryBf16PatternDecodesExactlyAndEncodesBack) {
  expect_every_pattern_decodes_and_encodes_back(DType::BF16, bf16_oracle);
}

TEST(SafetensorsDtype, EveryF16PatternDecodesExactlyAndEncodesBack) {
  expect_every_pattern_decodes_and_encodes_back(DType::F16, f16_oracle);
}

TEST(SafetensorsDtype, NamesAndSizesAreTheFormats) {
  const std::vector<std::tuple<DType, std::string, std::size_t>> expected{
      {DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2},
      {DType::I64, "I64", 8}, {DType::I32, "I32", 4}, {DType::U8, "U8", 1},   {DType::BOOL, "BOOL", 1}};
  for (const auto& [d, name, size] : expected) {
    EXPECT_EQ(larc::fixtures::dtype_name(d), name);
    EXPECT_EQ(larc::fixtures::dtype_size(d), size);
    EXPECT_EQ(larc::fixtures::dtype_from_name(name), d);
  }
  EXPECT_THROW(larc::fixtures::dtype_from_name("F8_E4M3"), FixtureError);
}

// Every dtype: values it holds exactly survive encode → decode unchanged, including the extremes.
TEST(SafetensorsDtype, RoundTripOfEveryDtype) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<DType, std::vector<double>>> cases{
      {DType::F64, {0.0, -0.0, 1.0 / 3.0, -std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max(), inf, -inf}},
      {DType::F32, {0.0, -0.0, 0.1f, -std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max(), inf, -inf}},
      {DType::F16, {0.0, -0.0, 65504.0, -0x1p-24, 0x1.ff8p-15, 1.0 + 0x1p-10, inf}},
      {DType::BF16, {0.0, -0.0, 0x1.fep127, -0x1p-133, 0x1p-126, 1.0 + 0x1p-7, -inf}},
      {DType::I64, {0.0, -1.0, 0x1p53, -0x1p63, 0x1p62}},
      {DType::I32, {0.0, -2147483648.0, 2147483647.0}},
      {DType::U8, {0.0, 255.0, 7.0}},
      {DType::BOOL, {0.0, 1.0, 1.0}},
  };
  for (const auto& [d, values] : cases) {
    const TensorData t = TensorData::from_doubles(d, {static_cast<std::int64_t>(values.size())}, values);
    ASSERT_EQ(t.bytes.size(), values.size() * larc::fixtures::dtype_size(d));
    const std::vector<double> back = t.to_doubles();
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double expected = d == DType::F32 ? static_cast<double>(static_cast<float>(values[i])) : values[i];
      EXPECT_EQ(back[i], expected) << larc::fixtures::dtype_name(d) << " element " << i;
      EXPECT_EQ(std::signbit(back[i]), std::signbit(expected)) << larc::fixtures::dtype_name(d) << " element " << i;
    }
  }
}

TEST(SafetensorsDtype, NanRoundTripsInEveryFloatDtype) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType d : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
    const std::vector<double> values{nan, -nan};
    const std::vector<double> back = TensorData::from_doubles(d, {2}, values).to_doubles();
    EXPECT_TRUE(std::isnan(back[0]) && !std::signbit(back[0])) << larc::fixtures::dtype_name(d);
    EXPECT_TRUE(std::isnan(back[1]) && std::signbit(back[1])) << larc::fixtures::dtype_name(d);
  }
}

// Little-endian bytes as the format stores them.
TEST(SafetensorsDtype, BytesAreLittleEndian) {
  const std::vector<double> v{1.0};
  EXPECT_EQ(TensorData::from_doubles(DType::BF16, {1}, v).bytes, (std::vector<std::byte>{std::byte{0x80}, std::byte{0x3f}}));
  EXPECT_EQ(TensorData::from_doubles(DType::F16, {1}, v).bytes, (std::vector<std::byte>{std::byte{0x00}, std::byte{0x3c}}));
  EXPECT_EQ(TensorData::from_doubles(DType::I32, {1}, std::vector<double>{258.0}).bytes,
            (std::vector<std::byte>{std::byte{2}, std::byte{1}, std::byte{0}, std::byte{0}}));
}

// Rounding belongs to the reference: values it rounded encode; the unrounded value does not.
TEST(SafetensorsDtype, LowPrecisionEncodesOnlyExactlyRepresentableValues) {
  using larc::ref::Dtype;
  for (const double x : {0.1, 1.0 + 0x1p-9, 1e-9, 3.14159, -123456.789}) {
    for (const auto& [fixture_dtype, ref_dtype] : {std::pair{DType::BF16, Dtype::bf16}, std::pair{DType::F16, Dtype::fp16}}) {
      const double rounded = larc::ref::round_to(ref_dtype, x);
      const std::vector<double> ok{rounded};
      EXPECT_EQ(TensorData::from_doubles(fixture_dtype, {1}, ok).to_doubles()[0], rounded) << x;
      if (rounded != x) {
        const std::vector<double> raw{x};
        EXPECT_THROW(TensorData::from_doubles(fixture_dtype, {1}, raw), FixtureError) << x;
      }
    }
  }
  // Beyond the largest finite value or below the smallest subnormal: no exact encoding.
  for (const double x : {65520.0, 0x1p-25, 0x1.8p-24}) EXPECT_THROW(TensorData::from_doubles(DType::F16, {1}, std::vector<double>{x}), FixtureError) << x;
  for (const double x : {0x1p128, 0x1p-134}) EXPECT_THROW(TensorData::from_doubles(DType::BF16, {1}, std::vector<double>{x}), FixtureError) << x;
}

TEST(SafetensorsDtype, InexactValuesNameTheElement) {
  try {
    TensorData::from_doubles(DType::BF16, {3}, std::vector<double>{1.0, 2.0, 0.1});
    FAIL() << "0.1 is no bf16 value";
  } catch (const FixtureError& e) {
    EXPECT_NE(std::string(e.what()).find("element 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("BF16"), std::string::npos) << e.what();
  }
  EXPECT_THROW(TensorData::from_doubles(DType::I32, {1}, std::vector<double>{0.5}), FixtureError);
  EXPECT_THROW(TensorData::from_doubles(DType::I32, {1}, std::vector<double>{0x1p31}), FixtureError);
  EXPECT_THROW(TensorData::from_doubles(DType::U8, {1}, std::vector<double>{-1.0}), FixtureError);
  EXPECT_THROW(TensorData::from_doubles(DType::BOOL, {1}, std::vector<double>{2.0}), FixtureError);
  EXPECT_THROW(TensorData::from_doubles(DType::I64, {1}, std::vector<double>{0x1p63}), FixtureError);
  EXPECT_THROW(TensorData::from_doubles(DType::I64, {1}, std::vector<double>{std::nan("")}), FixtureError);
  EXPECT_THROW(TensorData::from_doubles(DType::F32, {2}, std::vector<double>{1.0}), FixtureError);  // count ≠ shape
}

// I64 widens to double only where a double holds the value; to_int64s is exact everywhere.
TEST(SafetensorsDtype, I64BeyondDoublePrecisionIsRefusedByToDoubles) {
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  TensorData t{DType::I64, {2}, std::vector<std::byte>(16)};
  const std::int64_t values[2] = {7, big};
  std::memcpy(t.bytes.data(), values, 16);
  try {
    t.to_doubles("seed");
    FAIL() << "2^53 + 1 has no exact double";
  } catch (const FixtureError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'seed' element 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(t.to_int64s(), (std::vector<std::int64_t>{7, big}));
  EXPECT_THROW(TensorData::from_doubles(DType::F32, {1}, std::vector<double>{1.0}).to_int64s(), FixtureError);
}

TEST(SafetensorsDtype, BoolBytesOtherThanZeroOrOneAreRefused) {
  const TensorData t{DType::BOOL, {2}, {std::byte{1}, std::byte{2}}};
  EXPECT_THROW(t.to_doubles("mask"), FixtureError);
}

}  // namespace
