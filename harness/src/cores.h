// The core budget's internal side (cores.h): claims on idle cores, and a parallel loop over them.
#pragma once

#include <cstddef>
#include <functional>

namespace larc::harness::detail {

// Up to `wanted` cores taken from the idle ones (possibly none) for its lifetime.
class CoreClaim {
 public:
  explicit CoreClaim(unsigned wanted);
  ~CoreClaim();
  CoreClaim(CoreClaim&& other) noexcept : held_(other.held_) { other.held_ = 0; }
  CoreClaim(const CoreClaim&) = delete;
  CoreClaim& operator=(const CoreClaim&) = delete;
  CoreClaim& operator=(CoreClaim&&) = delete;
  unsigned held() const { return held_; }

 private:
  unsigned held_ = 0;
};

// The calling thread's own core given back to the idle ones for its lifetime (while it only waits).
class CoreLent {
 public:
  CoreLent();
  ~CoreLent();
  CoreLent(const CoreLent&) = delete;
  CoreLent& operator=(const CoreLent&) = delete;
};

// fn(i) for every i in [0, n): on the calling thread and on one thread per core `helpers` holds. The
// first exception any call throws is rethrown once every call has returned.
void parallel_for(std::size_t n, const CoreClaim& helpers, const std::function<void(std::size_t)>& fn);

// fn(begin, end) over [0, n) cut into runs of `run` elements, the runs shared with the idle cores when
// there are several: an element-wise pass over a large tensor (encoding, decoding) off the serial path.
void parallel_runs(std::size_t n, std::size_t run, const std::function<void(std::size_t, std::size_t)>& fn);

}  // namespace larc::harness::detail
