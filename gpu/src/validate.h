// Validation before every launch (docs/gpu.md, "Validation before every launch"): each tensor of a launch is bound to a pattern of
// dimension letters (the harness's: B, T, H, K, V, L, N, 1, e.g. "BTHK", "BHKV"); the first tensor
// naming a letter fixes its size and every later one must agree. Every problem becomes a message that
// names the kernel, the tensor, the field and what was expected; nothing is launched after one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "larc/gpu/api.h"

namespace larc::gpu::detail {

// Strides in elements of a tensor that passed validation, outermost first (up to 4 dims).
struct Strides {
  std::int64_t s[4] = {0, 0, 0, 0};
};

class Validator {
 public:
  Validator(std::string kernel_name, const LaunchArgs& args) : kernel_(std::move(kernel_name)), args_(args) {}

  // An input / output in `dtype` whose shape follows `letters`. Returns nullptr (and records an
  // error) when it is missing and required, or when anything about it is wrong; nullptr without an
  // error when it is optional and absent.
  const TensorView* input(std::string_view name, std::string_view letters, Dtype dtype, bool optional = false);
  const TensorView* output(std::string_view name, std::string_view letters, Dtype dtype, bool optional = false);

  // The dtype of input `name` (e.g. "q"), which the kernel then requires of every sequence tensor;
  // records an error when it is missing or not among `accepted`.
  Dtype dtype_of(std::string_view name, const std::vector<Dtype>& accepted);

  // Sets a letter's size before binding (e.g. L from T); records an error if bound differently later.
  void set(char letter, std::int64_t size) { sizes_[letter] = size; }
  std::int64_t size(char letter) const;  // 0 when unbound

  // Records `message` (prefixed with the kernel's name) unless `condition` holds.
  void require(bool condition, const std::string& message);
  // Requires a bound letter to be within [lo, hi] (hi = 0: no upper bound) and, when `only` is not
  // empty, one of its values.
  void require_size(char letter, std::int64_t lo, std::int64_t hi, const std::vector<std::int64_t>& only = {});
  // Requires the value heads W to be a multiple of the query/key heads H (both bound).
  void require_value_head_groups();
  // Requires `blocks` ≤ 2^31 − 1 (gridDim.x), the launch geometry every kernel here uses.
  void require_grid(std::int64_t blocks);
  // A varlen launch's offsets (FLA's convention): one packed batch entry (B = 1) and cu_seqlens int32 or
  // int64 [N+1], N + 1 ≥ 1; binds N. Call after the inputs that bind B.
  const TensorView* cu_seqlens();

  // The read scale of a kernel that has one: args.scale, or K^{-1/2} when it is 0 (records an error
  // unless it is finite and > 0). A launch of a kernel that never asks, with args.scale not 0, is
  // refused (ok() is false).
  float read_scale(std::int64_t K);

  bool ok() const { return error_.empty() && (args_.scale == 0 || scale_read_); }
  Status status() const;

  static Strides strides_of(const TensorView& t);

 private:
  const TensorView* bind(const Tensors& from, std::string_view role, std::string_view name, std::string_view letters,
                         Dtype dtype, bool optional);
  std::string expected(std::string_view letters, Dtype dtype) const;
  std::string kernel_;
  const LaunchArgs& args_;
  std::map<char, std::int64_t> sizes_;
  std::string error_;
  bool scale_read_ = false;
};

}  // namespace larc::gpu::detail
