// The element types of larc's tensors: one enum for the reference's rounding, the harness's typed
// tensors, the fixture files' tensors and the GPU kernels' tensor views (DESIGN.md "Layering rules": a
// dependency-free vocabulary shared by gpu/ and harness/). Header-only and free of any library, so
// nvcc and g++ both read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace larc {

// Floating-point values (bf16, fp16, fp32, fp64), the integer offsets of packed sequences (int32,
// int64: FLA's cu_seqlens), and the bytes and masks a fixture file may hold (uint8, bool).
enum class Dtype : std::uint8_t { bf16, fp16, fp32, fp64, i32, i64, u8, boolean };

inline constexpr Dtype kAllDtypes[] = {Dtype::bf16, Dtype::fp16, Dtype::fp32, Dtype::fp64,
                                       Dtype::i32,  Dtype::i64,  Dtype::u8,   Dtype::boolean};

// "bf16", "fp16", "fp32", "fp64", "int32", "int64", "uint8", "bool" (PyTorch's names for the
// integers and masks).
constexpr std::string_view dtype_name(Dtype d) {
  switch (d) {
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::fp32: return "fp32";
    case Dtype::fp64: return "fp64";
    case Dtype::i32: return "int32";
    case Dtype::i64: return "int64";
    case Dtype::u8: return "uint8";
    case Dtype::boolean: return "bool";
  }
  return "unknown";
}

constexpr std::size_t dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::bf16:
    case Dtype::fp16: return 2;
    case Dtype::fp32:
    case Dtype::i32: return 4;
    case Dtype::fp64:
    case Dtype::i64: return 8;
    case Dtype::u8:
    case Dtype::boolean: return 1;
  }
  return 0;
}

constexpr bool is_floating(Dtype d) {
  return d == Dtype::bf16 || d == Dtype::fp16 || d == Dtype::fp32 || d == Dtype::fp64;
}

}  // namespace larc
