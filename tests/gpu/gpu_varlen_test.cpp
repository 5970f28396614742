// Varlen GDN and KLA kernels (FLA's cu_seqlens convention): B = 1, sequence n spans
// tokens [cu[n], cu[n+1]), states [N,H,K,V]. On a device: a packed launch over sequences of lengths
// {0, 1, 63, 64, 65, 200} equals launching the non-varlen kernel of the same mechanism on each
// sequence alone, bitwise (outputs and final states, from random initial states); a corrupt
// cu_seqlens (decreasing, past T, negative) gives NaN final states for exactly those sequences,
// leaves their outputs unwritten and raises no CUDA error. Without a device those tests skip; the
// varlen validation (B = 1, cu_seqlens dtype and length, N-shaped states) needs none and runs in CI. The
// backward varlen kernels: packed gradients equal each sequence's alone, zero gradients on a padded tail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "larc/gpu/api.h"

namespace {

using larc::gpu::DeviceBuffer;
using larc::gpu::Dtype;
using larc::gpu::Kernel;
using larc::gpu::LaunchArgs;
using larc::gpu::Status;
using larc::gpu::TensorView;
using Shape = std::vector<std::int64_t>;

struct VarlenKernel {
  const char* varlen;     // the kernel under test
  const char* single;     // the same mechanism without cu_seqlens
  const char* mechanism;  // "gdn" or "kla"
  const char* step;       // the step gate's name: beta (GDN) or eta (KLA)
};
constexpr VarlenKernel kKernels[] = {{"gdn-fused-recurrent-varlen", "gdn-fused-recurrent", "gdn", "beta"},
                                     {"kla-fused-recurrent-varlen", "kla-fused-recurrent", "kla", "eta"},
                                     {"gdn-chunked-varlen", "gdn-chunked", "gdn", "beta"},
                                     {"kla-chunked-varlen", "kla-chunked", "kla", "eta"},
                                     {"gdn-chunked-io-varlen", "gdn-chunked-io", "gdn", "beta"},
                                     {"kla-chunked-io-varlen", "kla-chunked-io", "kla", "eta"}};

constexpr std::size_t kGuardBytes = 256;  // 0xFF bytes (NaN) after every device tensor

std::int64_t numel(const Shape& s) { return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>()); }
std::size_t bytes_of(Dtype d, const Shape& s) { return static_cast<std::size_t>(numel(s)) * larc::gpu::dtype_bytes(d); }

const Kernel& kernel(const char* name, const char* mechanism) {
  const Kernel* k = larc::gpu::find_kernel(name, mechanism);
  if (k == nullptr) throw std::runtime_error(std::string("kernel not registered: ") + name);
  return *k;
}

void require(const Status& s) {
  if (!s) throw std::runtime_error(s.message);
}

// A device tensor followed by a guard region; contents all 0xFF bytes (NaN in every float dtype)
// unless given.
struct DeviceTensor {
  DeviceBuffer buffer;
  TensorView view;

  DeviceTensor(Dtype dtype, const Shape& shape, const std::vector<unsigned char>& bytes = {}) {
    Status st;
    buffer = DeviceBuffer::allocate(bytes_of(dtype, shape) + kGuardBytes, st);
    require(st);
    require(larc::gpu::fill_device(buffer.get(), 0xFF, buffer.size()));
    if (!bytes.empty()) require(larc::gpu::copy_to_device(buffer.get(), bytes.data(), bytes.size()));
    view = {buffer.get(), dtype, shape, {}};
  }
  // Elements [first, first + shape[0]) of the outermost dimension, as a view of this buffer.
  TensorView rows(std::int64_t first, Shape shape) const {
    const std::int64_t row_elements = numel(Shape(view.shape.begin() + 1, view.shape.end()));
    return {static_cast<unsigned char*>(buffer.get()) + first * row_elements * larc::gpu::dtype_bytes(view.dtype),
            view.dtype, std::move(shape), {}};
  }
  std::vector<unsigned char> bytes() const {  // the tensor and its guard
    std::vector<unsigned char> out(buffer.size());
    require(larc::gpu::copy_to_host(out.data(), buffer.get(), out.size()));
    return out;
  }
};

// The bytes of `values` in dtype, fp32 or bf16 (rounded to nearest even; values are finite).
std::vector<unsigned char> encode(Dtype dtype, const std::vector<float>& values) {
  if (dtype != Dtype::fp32 && dtype != Dtype::bf16) throw std::invalid_argument("encode: fp32 or bf16 only");
  std::vector<unsigned char> out(values.size() * larc::gpu::dtype_bytes(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == Dtype::fp32) {
      std::memcpy(out.data() + 4 * i, &values[i], 4);
    } else {
      std::uint32_t u;
      std::memcpy(&u, &values[i], 4);
      const auto bits = static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
      std::memcpy(out.data() + 2 * i, &bits, 2);
    }
  }
  return out;
}

std::vector<float> uniform(std::mt19937_64& rng, std::int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> out(static_cast<std::size_t>(n));
  for (float& x : out) x = d(rng);
  return out;
}

std::vector<unsigned char> offsets_bytes(Dtype dtype, const std::vector<std::int64_t>& cu) {
  std::vector<unsigned char> out(cu.size() * larc::gpu::dtype_bytes(dtype));
  for (std::size_t i = 0; i < cu.size(); ++i) {
    if (dtype == Dtype::i64) {
      std::memcpy(out.data() + 8 * i, &cu[i], 8);
    } else {
      const auto v = static_cast<std::int32_t>(cu[i]);
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
  }
  return out;
}

bool all_bytes_ff(const unsigned char* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != 0xFF) return false;
  return true;
}

// The index of the first element of `n` elements of `element_bytes` each still all 0xFF, or −1.
std::int64_t first_unwritten(const unsigned char* p, std::int64_t n, std::size_t element_bytes) {
  for (std::int64_t i = 0; i < n; ++i)
    if (all_bytes_ff(p + i * element_bytes, element_bytes)) return i;
  return -1;
}

// Random packed inputs of T tokens and N random initial states [N,HV,K,V].
struct Packed {
  std::int64_t T, N, H, K, V, HV;  // HV: the value heads (v, gates, states), H unless grouped
  Dtype dtype;
  std::vector<DeviceTensor> owned;
  LaunchArgs args;

  Packed(const VarlenKernel& vk, Dtype dt, std::int64_t tokens, std::int64_t sequences, std::int64_t h, std::int64_t k,
         std::int64_t v, std::uint64_t seed, std::int64_t hv = 0)
      : T(tokens), N(sequences), H(h), K(k), V(v), HV(hv > 0 ? hv : h), dtype(dt) {
    std::mt19937_64 rng(seed);
    owned.reserve(8);
    auto add = [&](const std::string& name, Dtype d, const Shape& shape, const std::vector<unsigned char>& bytes) {
      owned.emplace_back(d, shape, bytes);
      args.inputs[name] = owned.back().view;
    };
    add("q", dt, {1, T, H, K}, encode(dt, uniform(rng, T * H * K, -1, 1)));
    const float key_bound = std::sqrt(3.0f / static_cast<float>(K));  // E‖k‖² = 1: GDN's delta steps stay contractive
    add("k", dt, {1, T, H, K}, encode(dt, uniform(rng, T * H * K, -key_bound, key_bound)));
    add("v", dt, {1, T, HV, V}, encode(dt, uniform(rng, T * HV * V, -1, 1)));
    add("g", dt, {1, T, HV}, encode(dt, uniform(rng, T * HV, -1, 0)));
    add(vk.step, dt, {1, T, HV}, encode(dt, uniform(rng, T * HV, 0.05f, 1)));
    add("initial_state", Dtype::fp32, {N, HV, K, V}, encode(Dtype::fp32, uniform(rng, N * HV * K * V, -1, 1)));
  }
  const DeviceTensor& input(const std::string& name) const {
    for (const DeviceTensor& t : owned)
      if (t.view.data == args.inputs.at(name).data) return t;
    throw std::runtime_error("no input " + name);
  }
};

struct Outputs {
  DeviceTensor o, final_state;
};

// The varlen kernel over all sequences of `packed` with these cu_seqlens.
Outputs run_varlen(const VarlenKernel& vk, const Packed& packed, Dtype cu_dtype, const std::vector<std::int64_t>& cu) {
  Outputs out{DeviceTensor(packed.dtype, {1, packed.T, packed.HV, packed.V}),
              DeviceTensor(Dtype::fp32, {packed.N, packed.HV, packed.K, packed.V})};
  const DeviceTensor offsets(cu_dtype, {static_cast<std::int64_t>(cu.size())}, offsets_bytes(cu_dtype, cu));
  LaunchArgs args = packed.args;
  args.inputs["cu_seqlens"] = offsets.view;
  args.outputs["o"] = out.o.view;
  args.outputs["final_state"] = out.final_state.view;
  require(kernel(vk.varlen, vk.mechanism).launch(args));
  require(larc::gpu::synchronize());
  return out;
}

// The inputs of sequence n alone, tokens [bos, eos) of `packed`: its per-sequence states (initial_state,
// dht) and its rows of every [1, T, ...] tensor.
LaunchArgs sequence_inputs(const Packed& packed, std::int64_t n, std::int64_t bos, std::int64_t eos) {
  LaunchArgs args;
  for (const auto& [name, view] : packed.args.inputs) {
    const DeviceTensor& t = packed.input(name);
    if (name == "initial_state" || name == "dht") {
      args.inputs[name] = t.rows(n, {1, packed.HV, packed.K, packed.V});
    } else {
      Shape shape = view.shape;
      shape[1] = eos - bos;
      TensorView v = t.rows(0, shape);  // [1, T, ...]: offset along T by bos rows of H·D elements
      v.data = static_cast<unsigned char*>(v.data) +
               bos * numel(Shape(view.shape.begin() + 2, view.shape.end())) * larc::gpu::dtype_bytes(view.dtype);
      args.inputs[name] = v;
    }
  }
  return args;
}

// The non-varlen kernel on tokens [bos, eos) of `packed` from initial state n alone.
Outputs run_alone(const VarlenKernel& vk, const Packed& packed, std::int64_t n, std::int64_t bos, std::int64_t eos) {
  const std::int64_t L = eos - bos;
  Outputs out{DeviceTensor(packed.dtype, {1, L, packed.HV, packed.V}),
              DeviceTensor(Dtype::fp32, {1, packed.HV, packed.K, packed.V})};
  LaunchArgs args = sequence_inputs(packed, n, bos, eos);
  args.outputs["o"] = out.o.view;
  args.outputs["final_state"] = out.final_state.view;
  require(kernel(vk.single, vk.mechanism).launch(args));
  require(larc::gpu::synchronize());
  return out;
}

#define SKIP_WITHOUT_DEVICE()                                                   \
  do {                                                                          \
    if (const auto info = larc::gpu::query_devices(); !info.present)            \
      GTEST_SKIP() << "no CUDA device: " << info.error;                         \
  } while (0)

struct Case {
  Dtype dtype, cu_dtype;
  std::int64_t H, K, V;
};

// A packed launch against each sequence launched alone by the non-varlen kernel. Prefill lengths
// and a decode batch (at most one token per sequence, which launches the decode geometry) both
// include a length-1 sequence, which alone is a decode launch: the two geometries must agree bitwise.
void expect_packed_equals_alone(const std::vector<std::int64_t>& lengths, std::uint64_t seed) {
  std::vector<std::int64_t> cu = {0};
  for (std::int64_t L : lengths) cu.push_back(cu.back() + L);
  const std::int64_t T = cu.back(), N = static_cast<std::int64_t>(lengths.size());
  // K = 48 and 200 are not powers of two; V = 40 and 17 leave a partial tile of value columns.
  const Case cases[] = {{Dtype::fp32, Dtype::i64, 2, 48, 40},
                        {Dtype::bf16, Dtype::i32, 1, 128, 128},
                        {Dtype::bf16, Dtype::i64, 1, 200, 17}};
  for (const VarlenKernel& vk : kKernels) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(vk.varlen) + " " + std::string(larc::gpu::dtype_name(c.dtype)) + " cu_seqlens " +
                   std::string(larc::gpu::dtype_name(c.cu_dtype)) + " H=" + std::to_string(c.H) +
                   " K=" + std::to_string(c.K) + " V=" + std::to_string(c.V));
      const Packed packed(vk, c.dtype, T, N, c.H, c.K, c.V, seed++);
      const Outputs together = run_varlen(vk, packed, c.cu_dtype, cu);
      const std::vector<unsigned char> o = together.o.bytes(), states = together.final_state.bytes();
      const std::size_t o_bytes = bytes_of(c.dtype, together.o.view.shape);
      const std::size_t state_bytes = static_cast<std::size_t>(c.H * c.K * c.V) * 4;
      EXPECT_TRUE(all_bytes_ff(o.data() + o_bytes, kGuardBytes)) << "o's guard region was written";
      EXPECT_TRUE(all_bytes_ff(states.data() + N * state_bytes, kGuardBytes)) << "final_state's guard region was written";
      const std::vector<unsigned char> initial = packed.input("initial_state").bytes();
      for (std::int64_t n = 0; n < N; ++n) {
        const Outputs alone = run_alone(vk, packed, n, cu[n], cu[n + 1]);
        const std::vector<unsigned char> o1 = alone.o.bytes(), s1 = alone.final_state.bytes();
        const std::size_t token_bytes = static_cast<std::size_t>(c.H * c.V) * larc::gpu::dtype_bytes(c.dtype);
        EXPECT_EQ(std::memcmp(o.data() + cu[n] * token_bytes, o1.data(), lengths[n] * token_bytes), 0)
            << "outputs of sequence " << n << " (length " << lengths[n] << ")";
        EXPECT_EQ(std::memcmp(states.data() + n * state_bytes, s1.data(), state_bytes), 0)
            << "final state of sequence " << n << " (length " << lengths[n] << ")";
        if (lengths[n] == 0) {
          EXPECT_EQ(std::memcmp(s1.data(), initial.data() + n * state_bytes, state_bytes), 0)
              << "an empty sequence's final state is its initial state";
        }
        for (std::size_t i = 0; i < state_bytes / 4; ++i) {
          float x;
          std::memcpy(&x, s1.data() + 4 * i, 4);
          ASSERT_TRUE(std::isfinite(x)) << "final state of sequence " << n << " element " << i << " is " << x;
        }
        EXPECT_EQ(first_unwritten(o1.data(), lengths[n] * c.H * c.V, larc::gpu::dtype_bytes(c.dtype)), -1)
            << "sequence " << n << ": an output element was not written";
      }
    }
  }
}

TEST(GpuVarlen, PackedSequencesEqualEachSequenceAloneBitwise) {
  SKIP_WITHOUT_DEVICE();
  expect_packed_equals_alone({0, 1, 63, 64, 65, 200}, 1);
}

TEST(GpuVarlen, DecodeBatchEqualsEachSequenceAloneBitwise) {
  SKIP_WITHOUT_DEVICE();
  expect_packed_equals_alone({1, 1, 0, 1, 1}, 50);
}

TEST(GpuVarlen, CorruptOffsetsGiveNaNFinalStatesAndNoError) {
  SKIP_WITHOUT_DEVICE();
  const std::int64_t T = 100, H = 2, K = 32, V = 24;
  // [0,30) is the one valid sequence; then decreasing, past T, reversed past T, negative.
  const std::vector<std::int64_t> cu = {0, 30, 20, 101, -5, 100};
  const std::int64_t N = static_cast<std::int64_t>(cu.size()) - 1;
  std::uint64_t seed = 100;
  for (const VarlenKernel& vk : kKernels) {
    for (const Dtype cu_dtype : {Dtype::i32, Dtype::i64}) {
      SCOPED_TRACE(std::string(vk.varlen) + " cu_seqlens " + std::string(larc::gpu::dtype_name(cu_dtype)));
      const Packed packed(vk, Dtype::fp32, T, N, H, K, V, seed++);
      const Outputs out = run_varlen(vk, packed, cu_dtype, cu);  // require()s a clean synchronize
      const std::vector<unsigned char> o = out.o.bytes(), states = out.final_state.bytes();
      const std::size_t state_bytes = static_cast<std::size_t>(H * K * V) * 4, token_bytes = H * V * 4;
      const Outputs valid = run_alone(vk, packed, 0, 0, 30);
      EXPECT_EQ(std::memcmp(states.data(), valid.final_state.bytes().data(), state_bytes), 0);
      EXPECT_EQ(std::memcmp(o.data(), valid.o.bytes().data(), 30 * token_bytes), 0);
      for (std::int64_t n = 1; n < N; ++n)
        for (std::size_t i = 0; i < state_bytes / 4; ++i) {
          float x;
          std::memcpy(&x, states.data() + n * state_bytes + 4 * i, 4);
          ASSERT_TRUE(std::isnan(x)) << "sequence " << n << " [" << cu[n] << ", " << cu[n + 1] << ") element " << i;
        }
      EXPECT_TRUE(all_bytes_ff(o.data() + 30 * token_bytes, (T - 30) * token_bytes + kGuardBytes))
          << "outputs past the valid sequence (or the guard) were written";
      EXPECT_TRUE(all_bytes_ff(states.data() + N * state_bytes, kGuardBytes)) << "final_state's guard was written";
    }
  }
}

// The backward varlen kernels (the gradient twins' subjects): packed sequences of lengths {0, 1, 63, 64, 65,
// 37} and then a padded tail of 5 tokens outside every sequence, from random initial states, do and dht:
// every gradient of a sequence and its dh0 equal the non-varlen backward kernel's on that sequence alone,
// bitwise, and the tail's gradients are zero. With HV = H, then with grouped value heads (HV = 3H: dq, dk
// per query/key head sum three value heads'; everything else per value head).
TEST(GpuVarlen, BackwardOfPackedSequencesWithAPaddedTailEqualsEachSequenceAlone) {
  SKIP_WITHOUT_DEVICE();
  struct Gradient {
    std::string name;
    std::int64_t heads, width;  // per token: heads × width elements ([1, T, heads] where width is 1)
    std::int64_t per_token() const { return heads * width; }
  };
  const std::vector<std::int64_t> lengths = {0, 1, 63, 64, 65, 37};
  std::vector<std::int64_t> cu = {0};
  for (std::int64_t L : lengths) cu.push_back(cu.back() + L);
  const std::int64_t tail = 5, T = cu.back() + tail, N = static_cast<std::int64_t>(lengths.size()), H = 2, K = 48, V = 40;
  const VarlenKernel kernels[] = {{"gdn-fused-recurrent-backward-varlen", "gdn-fused-recurrent-backward", "gdn-backward", "beta"},
                                  {"kla-fused-recurrent-backward-varlen", "kla-fused-recurrent-backward", "kla-backward", "eta"},
                                  {"gdn-chunked-backward-varlen", "gdn-chunked-backward", "gdn-backward", "beta"},
                                  {"kla-chunked-backward-varlen", "kla-chunked-backward", "kla-backward", "eta"},
                                  {"gdn-chunked-backward-io-varlen", "gdn-chunked-backward-io", "gdn-backward", "beta"},
                                  {"kla-chunked-backward-io-varlen", "kla-chunked-backward-io", "kla-backward", "eta"}};
  std::uint64_t seed = 200;
  for (const std::int64_t HV : {H, 3 * H})
    for (const VarlenKernel& vk : kernels) {
      SCOPED_TRACE(std::string(vk.varlen) + ", HV = " + std::to_string(HV));
      Packed packed(vk, Dtype::fp32, T, N, H, K, V, seed++, HV);
      std::mt19937_64 rng(seed++);
      packed.owned.emplace_back(Dtype::fp32, Shape{1, T, HV, V}, encode(Dtype::fp32, uniform(rng, T * HV * V, -1, 1)));
      packed.args.inputs["do"] = packed.owned.back().view;
      packed.owned.emplace_back(Dtype::fp32, Shape{N, HV, K, V}, encode(Dtype::fp32, uniform(rng, N * HV * K * V, -1, 1)));
      packed.args.inputs["dht"] = packed.owned.back().view;
      const std::vector<Gradient> gradients = {
          {"dq", H, K}, {"dk", H, K}, {"dv", HV, V}, {"dg", HV, 1}, {std::string("d") + vk.step, HV, 1}};
      auto launch = [&](const char* name, LaunchArgs args, std::int64_t tokens, std::int64_t sequences) {
        std::map<std::string, DeviceTensor> out;
        for (const Gradient& g : gradients) {
          const Shape shape = g.width == 1 ? Shape{1, tokens, g.heads} : Shape{1, tokens, g.heads, g.width};
          args.outputs[g.name] = out.emplace(g.name, DeviceTensor(Dtype::fp32, shape)).first->second.view;
        }
        args.outputs["dh0"] = out.emplace("dh0", DeviceTensor(Dtype::fp32, {sequences, HV, K, V})).first->second.view;
        require(kernel(name, vk.mechanism).launch(args));
        require(larc::gpu::synchronize());
        std::map<std::string, std::vector<unsigned char>> bytes;
        for (const auto& [g, t] : out) bytes[g] = t.bytes();
        return bytes;
      };
      const DeviceTensor offsets(Dtype::i64, {N + 1}, offsets_bytes(Dtype::i64, cu));
      LaunchArgs packed_args = packed.args;
      packed_args.inputs["cu_seqlens"] = offsets.view;
      const auto together = launch(vk.varlen, packed_args, T, N);
      const std::size_t state_bytes = static_cast<std::size_t>(HV * K * V) * 4;
      for (std::int64_t n = 0; n < N; ++n) {
        const auto alone = launch(vk.single, sequence_inputs(packed, n, cu[n], cu[n + 1]), lengths[n], 1);
        for (const Gradient& g : gradients)
          EXPECT_EQ(std::memcmp(together.at(g.name).data() + cu[n] * g.per_token() * 4, alone.at(g.name).data(),
                                lengths[n] * g.per_token() * 4),
                    0)
              << g.name << " of sequence " << n << " (length " << lengths[n] << ")";
        EXPECT_EQ(std::memcmp(together.at("dh0").data() + n * state_bytes, alone.at("dh0").data(), state_bytes), 0)
            << "dh0 of sequence " << n << " (length " << lengths[n] << ")";
      }
      for (const Gradient& g : gradients) {
        const std::vector<unsigned char> zeros(static_cast<std::size_t>(tail * g.per_token() * 4), 0);
        EXPECT_EQ(std::memcmp(together.at(g.name).data() + cu[N] * g.per_token() * 4, zeros.data(), zeros.size()), 0)
            << g.name << " past the last offset is not zero";
        EXPECT_TRUE(all_bytes_ff(together.at(g.name).data() + T * g.per_token() * 4, kGuardBytes))
            << g.name << "'s guard was written";
      }
    }
}

// Validation only: nothing here is launched on a device unless validation wrongly passes.
TEST(GpuVarlen, LaunchesOutsideTheConventionAreRefused) {
  const std::int64_t T = 10, H = 2, K = 16, V = 16, N = 2;
  std::uintptr_t fake = std::uintptr_t{1} << 20;
  auto view = [&](Dtype d, Shape shape) {
    TensorView v{reinterpret_cast<void*>(fake), d, std::move(shape), {}};
    fake += (bytes_of(d, v.shape) + 4095) / 4096 * 4096 + 4096;
    return v;
  };
  for (const VarlenKernel& vk : kKernels) {
    const Kernel& k = kernel(vk.varlen, vk.mechanism);
    EXPECT_TRUE(k.limits.varlen && k.limits.initial_state) << k.name;
    LaunchArgs good;
    good.inputs["q"] = view(Dtype::bf16, {1, T, H, K});
    good.inputs["k"] = view(Dtype::bf16, {1, T, H, K});
    good.inputs["v"] = view(Dtype::bf16, {1, T, H, V});
    good.inputs["g"] = view(Dtype::bf16, {1, T, H});
    good.inputs[vk.step] = view(Dtype::bf16, {1, T, H});
    good.inputs["cu_seqlens"] = view(Dtype::i32, {N + 1});
    good.inputs["initial_state"] = view(Dtype::fp32, {N, H, K, V});
    good.outputs["o"] = view(Dtype::bf16, {1, T, H, V});
    good.outputs["final_state"] = view(Dtype::fp32, {N, H, K, V});

    auto refused = [&](LaunchArgs a, const std::string& word, const std::string& what) {
      const Status st = k.launch(a);
      EXPECT_FALSE(st.ok) << k.name << " accepted " << what;
      EXPECT_NE(st.message.find(word), std::string::npos) << k.name << ", " << what << ": " << st.message;
      EXPECT_EQ(st.message.find("launch failed"), std::string::npos) << k.name << ", " << what << " reached the launch";
    };
    LaunchArgs a = good;
    for (const char* name : {"q", "k", "v", "g", vk.step}) a.inputs[name].shape[0] = 2;
    a.outputs["o"].shape[0] = 2;
    refused(a, "B = 1", "two batch entries");
    a = good;
    a.inputs.erase("cu_seqlens");
    refused(a, "'cu_seqlens'", "no cu_seqlens");
    a = good;
    a.inputs["cu_seqlens"].dtype = Dtype::fp32;
    refused(a, "'cu_seqlens'", "float cu_seqlens");
    a = good;
    a.inputs["cu_seqlens"].shape = {0};
    refused(a, "cu_seqlens", "an empty cu_seqlens");
    a = good;
    a.outputs["final_state"].shape[0] = N + 1;
    refused(a, "'final_state'", "N + 1 final states");
    a = good;
    a.inputs["initial_state"].shape[0] = 1;
    refused(a, "'initial_state'", "one initial state for two sequences");
  }
}

}  // namespace
