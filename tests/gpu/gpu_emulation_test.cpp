// The host emulation of gpu/ (gpu/emulation) against what the device does: the m16n8k16 MMA against a
// plain matrix product over PTX's fragment layout, the warp shuffles, barriers whose threads return
// early, the deadlock it names, shared memory poisoned before each block, Hopper's launch limits, graph
// capture and replay, and the bf16/fp16 conversions against the reference's rounding (every fp16 value
// and 200,000 random floats).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "cuda_runtime.h"
#include "larc/reference/low_precision.h"
#include "larc_device_emulation.h"

namespace {

// The emulated device is present only when asked for (set before any call reads it).
const bool emulated_device = setenv("LARC_EMULATE_GPU", "1", 1) == 0;

using larc::gpu::detail::dynamic_shared;
using larc::gpu::detail::launch_kernel;
using larc::gpu::detail::mma_bf16;

std::uint32_t pack(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return std::uint32_t{h.x.bits} | std::uint32_t{h.y.bits} << 16;
}

struct MmaArgs {
  const float* a;  // 16 × 16, row-major, bf16 values
  const float* b;  // 16 × 8, row-major (k, n), bf16 values
  float* d;        // 16 × 8, in: the accumulator, out: the result
};

// One warp: loads its fragments in PTX's layout, one MMA, stores its accumulators.
__global__ void one_mma(MmaArgs p) {
  const int lane = static_cast<int>(threadIdx.x), g = lane / 4, t = lane % 4;
  std::uint32_t a[4];
  for (int r = 0; r < 4; ++r) {
    const int row = g + 8 * (r % 2), col = 2 * t + 8 * (r / 2);
    a[r] = pack(p.a[row * 16 + col], p.a[row * 16 + col + 1]);
  }
  const std::uint32_t b0 = pack(p.b[(2 * t) * 8 + g], p.b[(2 * t + 1) * 8 + g]);
  const std::uint32_t b1 = pack(p.b[(2 * t + 8) * 8 + g], p.b[(2 * t + 9) * 8 + g]);
  float d[4];
  for (int i = 0; i < 4; ++i) d[i] = p.d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
  mma_bf16(d, a, b0, b1);
  for (int i = 0; i < 4; ++i) p.d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = d[i];
}

TEST(GpuEmulation, MmaIsTheMatrixProductInPtxsFragmentLayout) {
  ASSERT_TRUE(emulated_device);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<float> a(256), b(128), c(128);
  for (float& x : a) x = __bfloat162float(__float2bfloat16_rn(normal(rng)));
  for (float& x : b) x = __bfloat162float(__float2bfloat16_rn(normal(rng)));
  for (float& x : c) x = normal(rng);
  std::vector<float> d = c;
  launch_kernel(one_mma, 1, 32, 0, nullptr, MmaArgs{a.data(), b.data(), d.data()});
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n) {
      double exact = c[m * 8 + n];
      for (int k = 0; k < 16; ++k) exact += static_cast<double>(a[m * 16 + k]) * b[k * 8 + n];
      float truncated = static_cast<float>(exact);
      if (std::fabs(static_cast<double>(truncated)) > std::fabs(exact)) truncated = std::nextafter(truncated, 0.f);
      EXPECT_EQ(d[m * 8 + n], truncated) << "row " << m << ", column " << n;
    }
}

struct ShuffleArgs {
  float* xor_out;
  float* source_out;
  float* down_out;
};

__global__ void shuffles(ShuffleArgs p) {
  const int i = static_cast<int>(threadIdx.x);
  const float mine = static_cast<float>(i);
  p.xor_out[i] = __shfl_xor_sync(0xffffffffu, mine, 5);
  p.source_out[i] = __shfl_sync(0xffffffffu, mine, 3);
  p.down_out[i] = __shfl_down_sync(0xffffffffu, mine, 4u);
}

TEST(GpuEmulation, ShufflesReadTheNamedLaneOfTheirOwnWarp) {
  std::vector<float> x(64), s(64), d(64);
  launch_kernel(shuffles, 1, 64, 0, nullptr, ShuffleArgs{x.data(), s.data(), d.data()});
  for (int i = 0; i < 64; ++i) {
    const int warp = i / 32 * 32, lane = i % 32;
    EXPECT_EQ(x[i], static_cast<float>(warp + (lane ^ 5)));
    EXPECT_EQ(s[i], static_cast<float>(warp + 3));
    EXPECT_EQ(d[i], static_cast<float>(lane + 4 < 32 ? i + 4 : i));  // past the warp: its own value
  }
}

// Threads past `stay` return before the barrier; the rest sum what every staying thread wrote.
__global__ void early_return(int stay, int* out) {
  __shared__ int written[256];
  const int i = static_cast<int>(threadIdx.x);
  if (i >= stay) return;
  written[i] = i;
  __syncthreads();
  int sum = 0;
  for (int j = 0; j < stay; ++j) sum += written[j];
  out[blockIdx.x * 256 + i] = sum;
}

TEST(GpuEmulation, ThreadsThatReturnNoLongerHoldABarrier) {
  std::vector<int> out(2 * 256, -1);
  launch_kernel(early_return, 2, 256, 0, nullptr, 100, out.data());
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 256; ++i) EXPECT_EQ(out[b * 256 + i], i < 100 ? 99 * 100 / 2 : -1);
}

__global__ void read_dynamic_shared(float* out) { out[threadIdx.x] = dynamic_shared<float>()[threadIdx.x]; }

TEST(GpuEmulation, SharedMemoryStartsAsNaNInEveryBlock) {
  std::vector<float> out(32, 0.f);
  launch_kernel(read_dynamic_shared, 1, 32, 32 * sizeof(float), nullptr, out.data());
  for (float x : out) EXPECT_TRUE(std::isnan(x));
}

// Half a warp at a shuffle, the other half at the block's barrier: neither can finish.
__global__ void divergent_shuffle(float* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.f, 1);
  else __syncthreads();
}

TEST(GpuEmulationDeathTest, ADeadlockIsNamed) {
  std::vector<float> out(32);
  EXPECT_DEATH(launch_kernel(divergent_shuffle, 1, 32, 0, nullptr, out.data()), "deadlock");
}

__global__ void nothing() {}

TEST(GpuEmulation, LaunchesTheDeviceWouldRefuseFailAsItWould) {
  launch_kernel(nothing, 1, 1025, 0, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  launch_kernel(nothing, dim3(1, 65536), 32, 0, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  launch_kernel(nothing, 1, 32, 48 * 1024 + 16, nullptr);  // above 48 KB without the opt-in
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  ASSERT_EQ(cudaFuncSetAttribute(nothing, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024), cudaSuccess);
  launch_kernel(nothing, 1, 32, 100 * 1024, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_NE(cudaFuncSetAttribute(nothing, cudaFuncAttributeMaxDynamicSharedMemorySize, 228 * 1024), cudaSuccess);
}

__global__ void add_one(int* x) { x[threadIdx.x] += 1; }

TEST(GpuEmulation, ACapturedStreamRecordsItsLaunchesAndTheGraphReplaysThem) {
  std::vector<int> x(32, 0);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  launch_kernel(add_one, 1, 32, 0, stream, x.data());
  launch_kernel(add_one, 1, 32, 0, stream, x.data());
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  EXPECT_EQ(x[0], 0);  // recorded, not run
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  for (int v : x) EXPECT_EQ(v, 4);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(GpuEmulation, HalfConversionsRoundAsTheReference) {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const float f = __half2float(__half{static_cast<std::uint16_t>(bits)});
    if (std::isnan(f)) continue;
    EXPECT_EQ(__float2half_rn(f).bits, bits) << std::hex << bits;
  }
  std::mt19937 rng(9);
  std::uniform_int_distribution<std::uint32_t> words;
  for (int i = 0; i < 200000; ++i) {
    std::uint32_t w = words(rng);
    w = (w & 0x807fffffu) | ((0x60u + w % 0x30u) << 23);  // exponents 2^-31 .. 2^16: fp16's range and past it
    float f;
    std::memcpy(&f, &w, sizeof f);
    EXPECT_EQ(__half2float(__float2half_rn(f)), larc::ref::round_to_fp16(f)) << f;
    EXPECT_EQ(__bfloat162float(__float2bfloat16_rn(f)), larc::ref::round_to_bf16(f)) << f;
  }
}

}  // namespace
