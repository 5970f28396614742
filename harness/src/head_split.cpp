#include "head_split.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

#include "cores.h"
#include "larc/harness/cores.h"

namespace larc::harness::detail {

namespace {

// A tensor of dims `letters` seen as [B, X, E, Y], E its head axis: H, or W (the value heads, G per
// query/key head); an absent B or head axis counts as an axis of one. One pair (b, h) — a sequence and
// a query/key head with its G value heads — is X runs of w·Y contiguous elements, w = 1 on H and G on W.
struct PairLayout {
  std::int64_t B = 1, X = 1, E = 1, Y = 1, w = 1;

  PairLayout(const std::string& letters, const std::vector<std::int64_t>& shape, std::int64_t G) {
    const auto b = letters.find('B'), e = letters.find_first_of("HW");
    if (e != std::string::npos && letters[e] == 'W') w = G;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (i == b) B = shape[i];
      else if (i == e) E = shape[i];
      else if (e != std::string::npos && i > e) Y *= shape[i];
      else X *= shape[i];
    }
  }
  // Pair (b, h)'s block of `whole` into `pair`, and back (b, h are 0 on an absent axis).
  void gather(const double* whole, double* pair, std::int64_t b, std::int64_t h) const {
    for (std::int64_t x = 0; x < X; ++x)
      std::memcpy(pair + x * w * Y, whole + ((at(b, B) * X + x) * E + at(h, E) * w) * Y, sizeof(double) * w * Y);
  }
  void scatter(const double* pair, double* whole, std::int64_t b, std::int64_t h) const {
    for (std::int64_t x = 0; x < X; ++x)
      std::memcpy(whole + ((at(b, B) * X + x) * E + at(h, E) * w) * Y, pair + x * w * Y, sizeof(double) * w * Y);
  }
  static std::int64_t at(std::int64_t i, std::int64_t extent) { return extent == 1 ? 0 : i; }
};

// The shape of one pair's tensor: B and H of one, W of G.
std::vector<std::int64_t> pair_shape(const std::string& letters, std::vector<std::int64_t> shape, std::int64_t G) {
  for (std::size_t i = 0; i < letters.size(); ++i) {
    if (letters[i] == 'B' || letters[i] == 'H') shape[i] = 1;
    if (letters[i] == 'W') shape[i] = G;
  }
  return shape;
}

const TensorSpec* spec_of(const std::vector<TensorSpec>& specs, const std::string& name) {
  for (const TensorSpec& s : specs)
    if (s.name == name) return &s;
  return nullptr;
}

// The pairs of a call: B, H and the value heads per query/key head G, read off its inputs; B = H = 0 when
// an input is not the mechanism's or not of its rank (the whole call then says what is wrong) or an
// output has no head axis.
struct Pairs {
  std::int64_t B = 0, H = 0, G = 1;
};

Pairs pairs_of(const Mechanism& m, const ValueMap& in) {
  // An output without a head axis (a gradient of an input shared by every head would be one) is a sum
  // over the pairs, not a place for each: such a mechanism runs whole.
  for (const TensorSpec& o : m.outputs)
    if (o.dims.find_first_of("HW") == std::string::npos) return {};
  for (const auto& [name, t] : in) {
    const TensorSpec* s = spec_of(m.inputs, name);
    if (s == nullptr || t.shape.size() != s->dims.size()) return {};
  }
  auto extent = [&](char axis) -> std::int64_t {
    for (const TensorSpec& s : m.inputs)
      if (const auto t = in.find(s.name); t != in.end())
        if (const auto i = s.dims.find(axis); i != std::string::npos) return t->second.shape[i];
    return 0;
  };
  Pairs p{extent('B'), extent('H'), 1};
  if (const std::int64_t W = extent('W'); W > 0 && p.H > 0) p.G = W / p.H;
  return p;
}

ValueMap pair_inputs(const Mechanism& m, const ValueMap& in, const Pairs& n, std::int64_t b, std::int64_t h) {
  ValueMap out;
  for (const auto& [name, t] : in) {
    const TensorSpec* s = spec_of(m.inputs, name);  // pairs_of checked every input has one
    ref::Tensor<double> p(pair_shape(s->dims, t.shape, n.G));
    PairLayout(s->dims, t.shape, n.G).gather(t.data.data(), p.data.data(), b, h);
    out.emplace(name, std::move(p));
  }
  return out;
}

// The case's T, read off an input with a T axis (-1 without one).
std::int64_t time_extent(const Mechanism& m, const ValueMap& in) {
  for (const TensorSpec& s : m.inputs)
    if (const auto t = in.find(s.name); t != in.end() && s.dims.find('T') != std::string::npos && t->second.shape.size() == s.dims.size())
      return t->second.shape[s.dims.find('T')];
  return -1;
}

// The sequence lengths of a case with the input seq_lens [B] (mechanism.h, kVarlenKnob): whole numbers in
// [0, T]; throws std::invalid_argument naming the input otherwise.
std::vector<std::int64_t> sequence_lengths(const Mechanism& m, const ValueMap& in, std::int64_t T) {
  std::vector<std::int64_t> lengths;
  for (double x : in.at(kSeqLensInput).data) {
    if (!(x >= 0 && x <= static_cast<double>(T) && x == std::floor(x))) {
      std::ostringstream what;
      what << m.name << ": input '" << kSeqLensInput << "' holds " << x << ", expected a whole number of tokens in [0, T = "
           << T << "]";
      throw std::invalid_argument(what.str());
    }
    lengths.push_back(static_cast<std::int64_t>(x));
  }
  return lengths;
}

// x with its axis `axis` resized to `n`: the first n entries kept (n below the extent), or the tensor
// followed by zeros (n above it).
ref::Tensor<double> resize_axis(const ref::Tensor<double>& x, std::size_t axis, std::int64_t n) {
  std::vector<std::int64_t> shape = x.shape;
  const std::int64_t from = shape[axis];
  shape[axis] = n;
  ref::Tensor<double> r(shape);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < axis; ++i) outer *= x.shape[i];
  for (std::size_t i = axis + 1; i < x.shape.size(); ++i) inner *= x.shape[i];
  const std::int64_t kept = std::min(from, n) * inner;
  if (kept == 0) return r;  // an empty sequence (or a size-0 axis): nothing to copy, and no buffer to copy from
  for (std::int64_t o = 0; o < outer; ++o)
    std::memcpy(r.data.data() + o * n * inner, x.data.data() + o * from * inner, sizeof(double) * static_cast<std::size_t>(kept));
  return r;
}

// Every tensor of `values` that has a T axis in `specs`, resized to n along it.
void resize_time_axes(const std::vector<TensorSpec>& specs, ValueMap& values, std::int64_t n) {
  for (auto& [name, t] : values)
    if (const TensorSpec* s = spec_of(specs, name); s != nullptr && s->dims.find('T') != std::string::npos)
      t = resize_axis(t, s->dims.find('T'), n);
}

// Runs `whole` once per (b, h) pair on the idle cores and puts the pairs' outputs back together. With
// sequence lengths (seq_lens) the split is required, idle cores or not: each pair runs over its
// sequence's own tokens, and its outputs are padded back to T with zeros.
template <class Whole>
ValueMap over_pairs(const Mechanism& m, const ValueMap& in, const Whole& whole) {
  const Pairs n = pairs_of(m, in);
  const bool ragged = in.count(kSeqLensInput) != 0;
  if (ragged && n.B * n.H == 0)
    throw std::logic_error(m.name + ": an input '" + std::string(kSeqLensInput) + "' needs a per-sequence split");
  const std::int64_t T = ragged ? time_extent(m, in) : -1;
  const std::vector<std::int64_t> lengths = ragged ? sequence_lengths(m, in, T) : std::vector<std::int64_t>();
  if (!ragged && n.B * n.H <= 1) return whole(in);
  const CoreClaim helpers(static_cast<unsigned>(std::min<std::int64_t>(n.B * n.H - 1, core_budget())));
  if (!ragged && helpers.held() == 0) return whole(in);  // no idle core: the split would only add copies
  std::vector<ValueMap> pairs(static_cast<std::size_t>(n.B * n.H));
  parallel_for(pairs.size(), helpers, [&](std::size_t i) {
    const std::int64_t b = static_cast<std::int64_t>(i) / n.H;
    ValueMap x = pair_inputs(m, in, n, b, static_cast<std::int64_t>(i) % n.H);
    if (!ragged) {
      pairs[i] = whole(x);
      return;
    }
    x.erase(kSeqLensInput);
    resize_time_axes(m.inputs, x, lengths[static_cast<std::size_t>(b)]);
    pairs[i] = whole(x);
    resize_time_axes(m.outputs, pairs[i], T);
  });
  ValueMap out;
  for (auto& [name, first] : pairs.front()) {
    const TensorSpec* s = spec_of(m.outputs, name);
    if (s == nullptr || first.shape.size() != s->dims.size()) throw std::logic_error(m.name + ": unexpected output '" + name + "'");
    std::vector<std::int64_t> shape = first.shape;
    for (std::size_t i = 0; i < s->dims.size(); ++i) {
      if (s->dims[i] == 'B') shape[i] = n.B;
      if (s->dims[i] == 'H') shape[i] = n.H;
      if (s->dims[i] == 'W') shape[i] = n.H * n.G;
    }
    ref::Tensor<double> t(shape);
    const PairLayout layout(s->dims, shape, n.G);
    for (std::size_t i = 0; i < pairs.size(); ++i)
      layout.scatter(pairs[i].at(name).data.data(), t.data.data(), static_cast<std::int64_t>(i) / n.H,
                     static_cast<std::int64_t>(i) % n.H);
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace

void split_compute_over_heads(Mechanism& m) {
  Mechanism specs;  // what the split reads: the name and the inputs' and outputs' dims
  specs.name = m.name;
  specs.inputs = m.inputs;
  specs.outputs = m.outputs;
  if (m.compute)
    m.compute = [m = specs, whole = m.compute](const ValueMap& in, Precision p, ref::Form form, std::int64_t chunk) {
      return over_pairs(m, in, [&](const ValueMap& x) { return whole(x, p, form, chunk); });
    };
  if (m.compute_io)
    m.compute_io = [m = specs, whole = m.compute_io](const ValueMap& in, ref::OperandFormat operands, std::int64_t chunk) {
      return over_pairs(m, in, [&](const ValueMap& x) { return whole(x, operands, chunk); });
    };
  if (m.compute_rounding_draw)
    m.compute_rounding_draw = [m = specs, whole = m.compute_rounding_draw](const ValueMap& in, ref::Form form,
                                                                          std::int64_t chunk, std::uint64_t draw) {
      return over_pairs(m, in, [&](const ValueMap& x) { return whole(x, form, chunk, draw); });
    };
}

}  // namespace larc::harness::detail
