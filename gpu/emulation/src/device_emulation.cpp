// The host emulation's launches and warp-collective operations (larc_device_emulation.h): a launch runs
// its blocks one after another on the launching host thread, each block's threads as fibers (ucontext)
// switched at barriers; shared memory is filled with NaN bytes before every block, so that a read of a
// word no thread wrote shows. A block whose live threads all wait at barriers the others never reach
// (a divergent __syncthreads, a partial warp at a shuffle) aborts naming the deadlock.
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_bf16.h"
#include "emulation_state.h"
#include "larc_device_emulation.h"

thread_local uint3 threadIdx;
thread_local uint3 blockIdx;
thread_local dim3 blockDim;
thread_local dim3 gridDim;

namespace larc::gpu::emulation {

namespace {

constexpr std::size_t kDefaultSharedBytes = 48 * 1024, kMaxSharedBytes = 227 * 1024;
constexpr unsigned kMaxThreads = 1024, kMaxGridYZ = 65535;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "larc host emulation: %s\n", what);
  std::abort();
}

// A barrier over a block's fibers: the last of its parties to arrive releases the rest; a fiber that
// returns from the kernel leaves every barrier's party (it no longer holds the others up, as on the
// device).
struct Barrier {
  int parties = 0, arrived = 0;
  std::uint64_t generation = 0;
  void reset(int n) {
    parties = n;
    arrived = 0;
  }
  // true when this arrival (or departure) completes the barrier.
  bool complete() {
    if (arrived == 0 || arrived != parties) return false;
    arrived = 0;
    ++generation;
    return true;
  }
};

enum class FiberState { runnable, waiting, done };

struct Fiber {
  ucontext_t context;
  uint3 index;
  int linear = 0;
  FiberState state = FiberState::runnable;
  const Barrier* waiting_at = nullptr;
  std::uint64_t waiting_generation = 0;
};

struct Slot {
  alignas(16) unsigned char bytes[64];
};

// One block: its threads as fibers on the launching host thread, switched only at barriers, warp
// operations and return, in thread order — so every run of a launch gives the same bits.
struct Block {
  Barrier all;
  std::vector<Barrier> warps;
  std::vector<Slot> slots;  // 32 a warp
  std::vector<float4> shared;
  std::vector<Fiber> fibers;
  ucontext_t scheduler;
  Fiber* current = nullptr;
  const std::function<void()>* body = nullptr;
};

thread_local Block* t_block = nullptr;
thread_local int t_thread = 0;  // linear index in the block

// Fiber stacks: mapped without reserving swap, so only the pages a kernel's frames touch are committed;
// the lowest page of each is a guard, so that a frame too deep faults instead of writing into the
// neighbouring thread's stack.
class Stacks {
 public:
  static constexpr std::size_t kBytes = std::size_t{1} << 20, kGuard = 4096;
  explicit Stacks(int count) : bytes_(kBytes * static_cast<std::size_t>(count)) {
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base_ == MAP_FAILED) fail("no memory for the block's fiber stacks");
    for (int i = 0; i < count; ++i)
      if (mprotect(static_cast<char*>(base_) + kBytes * static_cast<std::size_t>(i), kGuard, PROT_NONE) != 0)
        fail("cannot protect a fiber stack's guard page");
  }
  ~Stacks() { munmap(base_, bytes_); }
  Stacks(const Stacks&) = delete;
  Stacks& operator=(const Stacks&) = delete;
  // Thread i's usable stack: kBytes − kGuard bytes above its guard page.
  void* stack(int i) const { return static_cast<char*>(base_) + kBytes * static_cast<std::size_t>(i) + kGuard; }

 private:
  std::size_t bytes_;
  void* base_;
};

std::mutex& launch_mutex() {
  static std::mutex m;
  return m;
}

std::map<const void*, std::size_t>& shared_opt_in() {
  static std::map<const void*, std::size_t> m;
  return m;
}

bool nearest_mma() {
  static const bool nearest = [] {
    const char* mode = std::getenv("LARC_EMULATION_MMA");
    return mode != nullptr && std::strcmp(mode, "nearest") == 0;
  }();
  return nearest;
}

// fp32 rounding of an (almost always exact) double sum: to nearest, or toward zero.
float round_sum(double s) {
  float f = static_cast<float>(s);
  if (!nearest_mma() && std::isfinite(f) && std::fabs(static_cast<double>(f)) > std::fabs(s)) f = std::nextafter(f, 0.f);
  return f;
}

// The bf16 in half `half` of a register (the low half first).
float bf16_half(std::uint32_t word, int half) {
  return __bfloat162float(__nv_bfloat16{static_cast<std::uint16_t>(half == 0 ? word : word >> 16)});
}

uint3 coordinates(std::uint64_t linear, dim3 extent) {
  return {static_cast<unsigned>(linear % extent.x), static_cast<unsigned>(linear / extent.x % extent.y),
          static_cast<unsigned>(linear / extent.x / extent.y)};
}

// Waits at b: the last arrival returns at once, the others switch to the scheduler until released.
void arrive_and_wait(Barrier& b) {
  if (t_block == nullptr) fail("a barrier or warp operation outside a kernel");
  ++b.arrived;
  if (b.complete()) return;
  Fiber& f = *t_block->current;
  f.state = FiberState::waiting;
  f.waiting_at = &b;
  f.waiting_generation = b.generation;
  swapcontext(&f.context, &t_block->scheduler);
}

void run_fiber() {
  Block& b = *t_block;
  (*b.body)();
  Fiber& f = *b.current;
  f.state = FiberState::done;
  --b.all.parties;
  b.all.complete();
  Barrier& warp = b.warps[static_cast<std::size_t>(f.linear / 32)];
  --warp.parties;
  warp.complete();
}  // returns to the scheduler (uc_link)

// Thread t of the block, about to enter the kernel on its own stack (getcontext here, not in the
// scheduling loop, whose locals a returns-twice call would make unsafe).
void start_fiber(Block& b, int t, dim3 block, void* stack) {
  Fiber& f = b.fibers[static_cast<std::size_t>(t)];
  f = Fiber{};
  f.index = coordinates(static_cast<std::uint64_t>(t), block);
  f.linear = t;
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = stack;
  f.context.uc_stack.ss_size = Stacks::kBytes - Stacks::kGuard;
  f.context.uc_link = &b.scheduler;
  makecontext(&f.context, run_fiber, 0);
}

void run_blocks(dim3 grid, dim3 block, std::size_t smem, const std::function<void()>& body) {
  const int threads = static_cast<int>(block.x * block.y * block.z);
  const int warps = (threads + 31) / 32;
  const std::uint64_t blocks = std::uint64_t{grid.x} * grid.y * grid.z;
  Block b;
  b.warps = std::vector<Barrier>(static_cast<std::size_t>(warps));
  b.slots.resize(static_cast<std::size_t>(warps) * 32);
  b.shared.resize(std::max<std::size_t>(1, (smem + sizeof(float4) - 1) / sizeof(float4)));
  b.fibers.resize(static_cast<std::size_t>(threads));
  b.body = &body;
  const Stacks stacks(threads);
  t_block = &b;
  blockDim = block;
  gridDim = grid;
  for (std::uint64_t n = 0; n < blocks; ++n) {
    blockIdx = coordinates(n, grid);
    b.all.reset(threads);
    for (int w = 0; w < warps; ++w) b.warps[static_cast<std::size_t>(w)].reset(std::min(32, threads - 32 * w));
    std::memset(b.shared.data(), 0xff, b.shared.size() * sizeof(float4));
    for (int t = 0; t < threads; ++t) start_fiber(b, t, block, stacks.stack(t));
    for (int live = threads; live > 0;) {
      bool resumed = false;
      live = 0;
      for (Fiber& f : b.fibers) {
        if (f.state == FiberState::done) continue;
        if (f.state == FiberState::waiting && f.waiting_at->generation == f.waiting_generation) {
          ++live;
          continue;
        }
        f.state = FiberState::runnable;
        b.current = &f;
        threadIdx = f.index;
        t_thread = f.linear;
        swapcontext(&b.scheduler, &f.context);
        resumed = true;
        if (f.state != FiberState::done) ++live;
      }
      if (live > 0 && !resumed)
        fail("deadlock: every live thread of a block waits at a barrier or warp operation that the others never reach");
    }
  }
  t_block = nullptr;
}

}  // namespace

void block_barrier() { arrive_and_wait(t_block->all); }

int lane_id() { return t_thread % 32; }

void* lane_slot(int lane) {
  if (t_block == nullptr) fail("a warp operation outside a kernel");
  return t_block->slots[static_cast<std::size_t>(t_thread / 32 * 32 + lane)].bytes;
}

void warp_barrier() { arrive_and_wait(t_block->warps[static_cast<std::size_t>(t_thread / 32)]); }

void* dynamic_shared_base() {
  if (t_block == nullptr) fail("dynamic shared memory outside a kernel");
  return t_block->shared.data();
}

void require_full_mask(unsigned mask, const char* what) {
  if (mask != 0xffffffffu) fail((std::string(what) + " with a partial mask: only whole-warp operations are emulated").c_str());
}

// PTX's m16n8k16 layouts (g = lane / 4, t = lane % 4): A register r of lane (g, t) holds row
// g + 8·(r % 2), columns 2t + 8·(r / 2) and the next (low half first); B register r holds rows
// 2t + 8r and the next of column g; accumulator i holds row g + 8·(i / 2), column 2t + i % 2.
void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  std::uint32_t mine[6] = {a[0], a[1], a[2], a[3], b0, b1};
  const int lane = lane_id();
  std::memcpy(lane_slot(lane), mine, sizeof mine);
  warp_barrier();
  const auto word = [](int source, int r) {
    std::uint32_t w;
    std::memcpy(&w, static_cast<const unsigned char*>(lane_slot(source)) + 4 * r, sizeof w);
    return w;
  };
  const auto a_at = [&](int row, int k) {
    return bf16_half(word(row % 8 * 4 + k % 8 / 2, row / 8 + 2 * (k / 8)), k % 2);
  };
  const auto b_at = [&](int k, int col) { return bf16_half(word(col * 4 + k % 8 / 2, 4 + k / 8), k % 2); };
  float out[4];
  for (int i = 0; i < 4; ++i) {
    const int row = lane / 4 + 8 * (i / 2), col = 2 * (lane % 4) + i % 2;
    double s = d[i];
    for (int k = 0; k < 16; ++k) s += static_cast<double>(a_at(row, k)) * b_at(k, col);  // each product exact
    out[i] = round_sum(s);
  }
  warp_barrier();
  std::memcpy(d, out, sizeof out);
}

cudaError_t set_max_dynamic_shared(const void* kernel, int bytes) {
  if (!device_present()) return set_last_error(cudaErrorNoDevice);
  if (bytes < 0 || static_cast<std::size_t>(bytes) > kMaxSharedBytes) return cudaErrorInvalidValue;
  std::lock_guard lock(launch_mutex());
  shared_opt_in()[kernel] = static_cast<std::size_t>(bytes);
  return cudaSuccess;
}

cudaError_t launch(const void* kernel, dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                   std::function<void()> body) {
  const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
  cudaError_t e = device_present() ? cudaSuccess : cudaErrorNoDevice;
  if (e == cudaSuccess && (threads == 0 || threads > kMaxThreads || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
                           grid.x > 0x7fffffffu || grid.y > kMaxGridYZ || grid.z > kMaxGridYZ))
    e = cudaErrorInvalidConfiguration;
  if (e == cudaSuccess && smem > kDefaultSharedBytes) {
    std::lock_guard lock(launch_mutex());
    const auto it = shared_opt_in().find(kernel);
    if (it == shared_opt_in().end() || smem > it->second) e = cudaErrorInvalidValue;
  }
  if (e != cudaSuccess) return set_last_error(e);
  if (record_if_capturing(stream, [=] { return launch(kernel, grid, block, smem, nullptr, body); })) return cudaSuccess;
  std::lock_guard lock(launch_mutex());  // one launch at a time: a kernel's __shared__ arrays are per launch
  run_blocks(grid, block, smem, body);
  return cudaSuccess;
}

}  // namespace larc::gpu::emulation
