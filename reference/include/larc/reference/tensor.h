// Batched tensors in FLA's layout (SPEC "Notation"): row-major [B, T, H, D] for q/k/v/o, [B, T, H]
// for gates, [B, H, d_k, d_v] for states. The reference runs per head on T×D matrices; these
// helpers cut a head out of a batch and put it back.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "larc/reference/types.h"

namespace larc::ref {

// Which form of a mechanism a batched wrapper runs on every head.
enum class Form { serial, materialized, chunked, streamed };

inline const char* form_name(Form f) {
  switch (f) {
    case Form::serial: return "serial";
    case Form::materialized: return "materialized";
    case Form::chunked: return "chunked";
    case Form::streamed: return "streamed";
  }
  return "?";
}

template <class S>
struct Tensor {
  std::vector<std::int64_t> shape;
  std::vector<S> data;

  Tensor() = default;
  explicit Tensor(std::vector<std::int64_t> shp) : shape(std::move(shp)), data(count(shape), S(0)) {}

  static std::size_t count(const std::vector<std::int64_t>& shp) {
    return std::accumulate(shp.begin(), shp.end(), std::size_t{1},
                           [](std::size_t a, std::int64_t b) { return a * static_cast<std::size_t>(b); });
  }
  std::int64_t dim(std::size_t i) const { return shape.at(i); }
};

inline std::string shape_string(const std::vector<std::int64_t>& shp) {
  std::string s = "[";
  for (std::size_t i = 0; i < shp.size(); ++i) s += (i ? ", " : "") + std::to_string(shp[i]);
  return s + "]";
}

// Throws std::invalid_argument naming `field` unless x has rank `rank` and the given dims
// (a negative expected dim matches anything).
template <class S>
void require_shape(const Tensor<S>& x, const char* field, std::vector<std::int64_t> expected) {
  bool ok = x.shape.size() == expected.size() && x.data.size() == Tensor<S>::count(x.shape);
  for (std::size_t i = 0; ok && i < expected.size(); ++i) ok = expected[i] < 0 || expected[i] == x.shape[i];
  if (!ok) {
    std::string want = "[";
    for (std::size_t i = 0; i < expected.size(); ++i)
      want += (i ? ", " : "") + (expected[i] < 0 ? std::string("*") : std::to_string(expected[i]));
    throw std::invalid_argument(std::string(field) + ": expected shape " + want + "], got " + shape_string(x.shape));
  }
}

// The sizes of a batched attention call: q, k [B, T, H, K], v [B, T, H, V], state [B, H, K, V].
struct BatchedDims {
  std::int64_t B, T, H, K, V;
};

// Checks q/k/v (and the initial state when given) against each other, naming the field that disagrees.
template <class S>
BatchedDims batched_dims(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const Tensor<S>* initial_state) {
  require_shape(q, "q", {-1, -1, -1, -1});
  const auto B = q.dim(0), T = q.dim(1), H = q.dim(2), K = q.dim(3);
  require_shape(k, "k", {B, T, H, K});
  require_shape(v, "v", {B, T, H, -1});
  const auto V = v.dim(3);
  if (K < 1) throw std::invalid_argument("q: head dimension d_k must be >= 1, got " + std::to_string(K));
  if (V < 1) throw std::invalid_argument("v: head dimension d_v must be >= 1, got " + std::to_string(V));
  if (initial_state) require_shape(*initial_state, "initial_state", {B, H, K, V});
  return {B, T, H, K, V};
}

// The [B, T, H] shape per-token gates must have, after checking that q is [B, T, H, K].
template <class S>
std::vector<std::int64_t> gate_shape_of(const Tensor<S>& q) {
  require_shape(q, "q", {-1, -1, -1, -1});
  return {q.dim(0), q.dim(1), q.dim(2)};
}

namespace detail {
// f(t, d) over a head's T×D rows, a tile of 16 tokens at a time with d outer inside it: the column-major
// T×D matrix is then walked 16 contiguous elements at a time and the tile's rows of the [B, T, H, D]
// tensor stay in cache (token by token, d inner, every write of a long column lands on another page).
template <class F>
void for_each_head_element(std::int64_t T, std::int64_t D, F f) {
  constexpr std::int64_t kTokenTile = 16;
  for (std::int64_t t0 = 0; t0 < T; t0 += kTokenTile) {
    const std::int64_t t1 = std::min(T, t0 + kTokenTile);
    for (std::int64_t d = 0; d < D; ++d)
      for (std::int64_t t = t0; t < t1; ++t) f(t, d);
  }
}
}  // namespace detail

// [B, T, H, D] → T×D for (b, h).
template <class S>
Mat<S> head_rows(const Tensor<S>& x, std::int64_t b, std::int64_t h) {
  const std::int64_t T = x.dim(1), H = x.dim(2), D = x.dim(3);
  Mat<S> m(T, D);
  detail::for_each_head_element(T, D, [&](std::int64_t t, std::int64_t d) { m(t, d) = x.data[((b * T + t) * H + h) * D + d]; });
  return m;
}

template <class S>
void set_head_rows(Tensor<S>& x, std::int64_t b, std::int64_t h, const Mat<S>& m) {
  const std::int64_t T = x.dim(1), H = x.dim(2), D = x.dim(3);
  detail::for_each_head_element(T, D, [&](std::int64_t t, std::int64_t d) { x.data[((b * T + t) * H + h) * D + d] = m(t, d); });
}

// [B, T, H] → T for (b, h).
template <class S>
Vec<S> head_gate(const Tensor<S>& g, std::int64_t b, std::int64_t h) {
  const std::int64_t T = g.dim(1), H = g.dim(2);
  Vec<S> v(T);
  for (std::int64_t t = 0; t < T; ++t) v(t) = g.data[(b * T + t) * H + h];
  return v;
}

template <class S>
void set_head_gate(Tensor<S>& g, std::int64_t b, std::int64_t h, const Vec<S>& v) {
  const std::int64_t T = g.dim(1), H = g.dim(2);
  for (std::int64_t t = 0; t < T; ++t) g.data[(b * T + t) * H + h] = v(t);
}

// [B, H, K, V] → K×V for (b, h).
template <class S>
Mat<S> head_state(const Tensor<S>& s, std::int64_t b, std::int64_t h) {
  const std::int64_t H = s.dim(1), K = s.dim(2), V = s.dim(3);
  Mat<S> m(K, V);
  for (std::int64_t i = 0; i < K; ++i)
    for (std::int64_t j = 0; j < V; ++j) m(i, j) = s.data[((b * H + h) * K + i) * V + j];
  return m;
}

template <class S>
void set_head_state(Tensor<S>& s, std::int64_t b, std::int64_t h, const Mat<S>& m) {
  const std::int64_t H = s.dim(1), K = s.dim(2), V = s.dim(3);
  for (std::int64_t i = 0; i < K; ++i)
    for (std::int64_t j = 0; j < V; ++j) s.data[((b * H + h) * K + i) * V + j] = m(i, j);
}

// [B, H, K] → K for (b, h): a per-head vector of a state (a normaliser, a key sum).
template <class S>
Vec<S> head_vector(const Tensor<S>& x, std::int64_t b, std::int64_t h) {
  const std::int64_t H = x.dim(1), K = x.dim(2);
  return Eigen::Map<const Vec<S>>(&x.data[static_cast<std::size_t>((b * H + h) * K)], K);
}

template <class S>
void set_head_vector(Tensor<S>& x, std::int64_t b, std::int64_t h, const Vec<S>& v) {
  const std::int64_t H = x.dim(1), K = x.dim(2);
  std::copy(v.data(), v.data() + K, x.data.begin() + (b * H + h) * K);
}

// The cotangents of a batched call's outputs, each absent counting as zero: do [B, T, H, d_v] and
// dht [B, H, d_k, d_v] (of the final state), as FLA's backward takes them.
template <class S>
struct BatchedCotangents {
  std::optional<Tensor<S>> d_o, d_final_state;

  // Throws std::invalid_argument naming "do" or "dht" when its shape is not the call's.
  void require_shapes(const BatchedDims& d) const {
    if (d_o) require_shape(*d_o, "do", {d.B, d.T, d.H, d.V});
    if (d_final_state) require_shape(*d_final_state, "dht", {d.B, d.H, d.K, d.V});
  }
  // (b, h)'s do rows (T×d_v; empty when absent) and dht (d_k×d_v; absent when absent).
  Mat<S> head_d_o(std::int64_t b, std::int64_t h) const { return d_o ? head_rows(*d_o, b, h) : Mat<S>(); }
  std::optional<Mat<S>> head_d_final_state(std::int64_t b, std::int64_t h) const {
    if (!d_final_state) return std::nullopt;
    return head_state(*d_final_state, b, h);
  }
};

}  // namespace larc::ref
