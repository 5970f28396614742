#include "larc/harness/cores.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "cores.h"

namespace larc::harness {

namespace {
std::atomic<unsigned> budget{1};
std::atomic<int> idle{0};  // cores of the budget no thread holds
}  // namespace

void set_core_budget(unsigned cores) {
  cores = std::max(1u, cores);
  budget = cores;
  idle = static_cast<int>(cores) - 1;
}

unsigned core_budget() { return budget; }

ScopedCoreBudget::ScopedCoreBudget(unsigned cores) : previous_(core_budget()) { set_core_budget(cores); }
ScopedCoreBudget::~ScopedCoreBudget() { set_core_budget(previous_); }

namespace detail {

CoreClaim::CoreClaim(unsigned wanted) {
  int free = idle.load();
  while (free > 0 && wanted > 0) {
    const int take = std::min(free, static_cast<int>(wanted));
    if (idle.compare_exchange_weak(free, free - take)) {
      held_ = static_cast<unsigned>(take);
      return;
    }
  }
}

CoreClaim::~CoreClaim() { idle += static_cast<int>(held_); }

CoreLent::CoreLent() { ++idle; }
CoreLent::~CoreLent() { --idle; }

void parallel_for(std::size_t n, const CoreClaim& helpers, const std::function<void(std::size_t)>& fn) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    for (std::size_t i; (i = next++) < n;) {
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = n;
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < helpers.held(); ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

void parallel_runs(std::size_t n, std::size_t run, const std::function<void(std::size_t, std::size_t)>& fn) {
  const std::size_t runs = (n + run - 1) / run;
  const CoreClaim helpers(static_cast<unsigned>(std::min<std::size_t>(runs > 0 ? runs - 1 : 0, core_budget())));
  parallel_for(runs, helpers, [&](std::size_t r) { fn(r * run, std::min(n, (r + 1) * run)); });
}

}  // namespace detail
}  // namespace larc::harness
