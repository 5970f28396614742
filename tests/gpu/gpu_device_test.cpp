// larc::gpu::query_devices: skipped (with the CUDA runtime's reason) where no device is present, as
// in CI; on the H200 host it must report a named device of a real compute capability.
#include <gtest/gtest.h>

#include "larc/gpu/api.h"

namespace {

TEST(GpuDevice, QueryReportsASaneDeviceOrWhyThereIsNone) {
  const larc::gpu::DeviceInfo info = larc::gpu::query_devices();
  if (!info.present) {
    EXPECT_FALSE(info.error.empty()) << "no device, but no reason given";
    GTEST_SKIP() << "no CUDA device: " << info.error;
  }
  RecordProperty("device", info.name);
  RecordProperty("compute_capability", std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor));
  EXPECT_GE(info.count, 1);
  EXPECT_FALSE(info.name.empty());
  EXPECT_TRUE(info.error.empty()) << info.error;
  EXPECT_GE(info.cc_major, 7) << "nvcc 13 builds nothing older than sm_75";
  EXPECT_LE(info.cc_major, 20);
  EXPECT_GE(info.cc_minor, 0);
  EXPECT_LE(info.cc_minor, 9);
}

}  // namespace
