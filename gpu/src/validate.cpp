#include "validate.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace larc::gpu::detail {

namespace {
std::string shape_str(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}
}  // namespace

std::int64_t Validator::size(char letter) const {
  if (letter == '1') return 1;
  const auto it = sizes_.find(letter);
  return it == sizes_.end() ? 0 : it->second;
}

void Validator::require(bool condition, const std::string& message) {
  if (!condition && error_.empty()) error_ = kernel_ + ": " + message;
}

float Validator::read_scale(std::int64_t K) {
  scale_read_ = true;
  require(std::isfinite(args_.scale) && args_.scale >= 0,
          "scale must be finite and > 0 (0: K^-1/2), got " + std::to_string(args_.scale));
  if (args_.scale != 0) return static_cast<float>(args_.scale);
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(std::max<std::int64_t>(K, 1))));
}

Status Validator::status() const {
  if (!error_.empty()) return Status::failure(error_);
  if (!ok()) return Status::failure(kernel_ + ": takes no scale (LaunchArgs::scale must be 0), got " + std::to_string(args_.scale));
  return Status::success();
}

std::string Validator::expected(std::string_view letters, Dtype dtype) const {
  std::string dims = "[", known = "[";
  bool all_known = true;
  for (std::size_t i = 0; i < letters.size(); ++i) {
    const bool bound = letters[i] == '1' || sizes_.count(letters[i]);
    all_known = all_known && bound;
    if (i) {
      dims += ',';
      known += ',';
    }
    dims += letters[i];
    known += bound ? std::to_string(size(letters[i])) : "?";
  }
  return dims + "]" + (all_known ? " = " + known + "]" : "") + " " + std::string(dtype_name(dtype));
}

Dtype Validator::dtype_of(std::string_view name, const std::vector<Dtype>& accepted) {
  const auto it = args_.inputs.find(name);
  if (it == args_.inputs.end()) {
    require(false, "input '" + std::string(name) + "' is missing");
    return accepted.empty() ? Dtype::fp32 : accepted.front();
  }
  bool found = false;
  std::string names;
  for (Dtype d : accepted) {
    found = found || d == it->second.dtype;
    if (!names.empty()) names += ", ";
    names += dtype_name(d);
  }
  require(found, "input '" + std::string(name) + "' has dtype " + std::string(dtype_name(it->second.dtype)) +
                     "; this kernel takes " + names);
  return it->second.dtype;
}

const TensorView* Validator::input(std::string_view name, std::string_view letters, Dtype dtype, bool optional) {
  return bind(args_.inputs, "input", name, letters, dtype, optional);
}
const TensorView* Validator::output(std::string_view name, std::string_view letters, Dtype dtype, bool optional) {
  return bind(args_.outputs, "output", name, letters, dtype, optional);
}

const TensorView* Validator::bind(const Tensors& from, std::string_view role, std::string_view name,
                                  std::string_view letters, Dtype dtype, bool optional) {
  if (!error_.empty()) return nullptr;
  const std::string what = std::string(role) + " '" + std::string(name) + "'";
  const auto it = from.find(name);
  if (it == from.end()) {
    require(optional, what + " is missing (expected " + expected(letters, dtype) + ")");
    return nullptr;
  }
  const TensorView& t = it->second;
  if (t.shape.size() != letters.size()) {
    require(false, what + " has shape " + shape_str(t.shape) + "; expected " + expected(letters, dtype));
    return nullptr;
  }
  for (std::size_t i = 0; i < letters.size(); ++i) {
    const char c = letters[i];
    if (t.shape[i] < 0) {
      require(false, what + " dimension " + std::to_string(i) + " is negative (" + std::to_string(t.shape[i]) + ")");
      return nullptr;
    }
    const bool bound = c == '1' || sizes_.count(c);
    if (bound && t.shape[i] != size(c)) {
      require(false, what + " has shape " + shape_str(t.shape) + "; expected " + expected(letters, dtype) +
                         " (dimension " + std::to_string(i) + " '" + std::string(1, c) + "' must be " +
                         std::to_string(size(c)) + ")");
      return nullptr;
    }
    if (!bound) sizes_[c] = t.shape[i];
  }
  if (t.dtype != dtype) {
    require(false, what + " has dtype " + std::string(dtype_name(t.dtype)) + "; expected " + expected(letters, dtype));
    return nullptr;
  }
  if (!t.strides.empty() && t.strides.size() != t.shape.size()) {
    require(false, what + " has " + std::to_string(t.strides.size()) + " strides for " +
                       std::to_string(t.shape.size()) + " dimensions");
    return nullptr;
  }
  const std::vector<std::int64_t> strides = t.effective_strides();
  // The largest element offset must fit an int64 (kernels index with 64-bit offsets).
  __int128 last = 0;
  for (std::size_t i = 0; i < strides.size(); ++i) {
    if (strides[i] < 0) {
      require(false, what + " stride " + std::to_string(i) + " is negative (" + std::to_string(strides[i]) +
                         "); negative strides are not supported");
      return nullptr;
    }
    if (t.shape[i] > 0) last += static_cast<__int128>(t.shape[i] - 1) * strides[i];
  }
  if (last * static_cast<__int128>(dtype_bytes(dtype)) > std::numeric_limits<std::int64_t>::max()) {
    require(false, what + " spans more than 2^63 bytes");
    return nullptr;
  }
  if (!t.shape.empty() && t.shape.back() > 1 && strides.back() != 1) {
    require(false, what + " innermost stride is " + std::to_string(strides.back()) +
                       "; the innermost dimension must be contiguous (stride 1)");
    return nullptr;
  }
  if (t.numel() > 0 && t.data == nullptr) {
    require(false, what + " has a null data pointer");
    return nullptr;
  }
  if (reinterpret_cast<std::uintptr_t>(t.data) % dtype_bytes(dtype) != 0) {
    require(false, what + " data pointer is not aligned to its element size (" +
                       std::to_string(dtype_bytes(dtype)) + " bytes)");
    return nullptr;
  }
  return &t;
}

void Validator::require_size(char letter, std::int64_t lo, std::int64_t hi, const std::vector<std::int64_t>& only) {
  if (!error_.empty()) return;
  const std::int64_t n = size(letter);
  const std::string l(1, letter);
  require(n >= lo, l + " = " + std::to_string(n) + " is below the smallest this kernel takes (" + std::to_string(lo) + ")");
  require(hi == 0 || n <= hi, l + " = " + std::to_string(n) + " exceeds this kernel's limit " + std::to_string(hi));
  if (only.empty()) return;
  bool found = false;
  std::string list;
  for (std::int64_t x : only) {
    found = found || x == n;
    if (!list.empty()) list += ", ";
    list += std::to_string(x);
  }
  require(found, l + " = " + std::to_string(n) + " is not supported; this kernel takes " + l + " in {" + list + "}");
}

const TensorView* Validator::cu_seqlens() {
  require(size('B') == 1, "varlen kernels take one packed batch entry (B = 1), got B = " + std::to_string(size('B')));
  const Dtype cu_dtype = dtype_of("cu_seqlens", {Dtype::i32, Dtype::i64});
  const TensorView* cu = input("cu_seqlens", "S", cu_dtype);
  require(size('S') >= 1, "cu_seqlens must have N + 1 ≥ 1 entries");
  if (error_.empty()) set('N', size('S') - 1);
  return cu;
}

void Validator::require_value_head_groups() {
  const std::int64_t H = size('H'), W = size('W');
  require((H == 0 && W == 0) || (H > 0 && W % H == 0), "the value heads (v's heads, " + std::to_string(W) +
                                            ") must be a multiple of q's and k's heads (" + std::to_string(H) + ")");
}

void Validator::require_grid(std::int64_t blocks) {
  require(blocks <= std::numeric_limits<std::int32_t>::max(),
          "the launch needs " + std::to_string(blocks) + " blocks, more than gridDim.x allows (2^31 - 1)");
}

Strides Validator::strides_of(const TensorView& t) {
  Strides out;
  const std::vector<std::int64_t> s = t.effective_strides();
  for (std::size_t i = 0; i < s.size() && i < 4; ++i) out.s[i] = s[i];
  return out;
}

}  // namespace larc::gpu::detail
