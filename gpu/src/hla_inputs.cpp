#include "hla_inputs.h"

#include <cstdint>

namespace larc::gpu::detail {

HlaInputs validate_hla(Validator& v) {
  HlaInputs in;
  in.dtype = v.dtype_of("q", {Dtype::bf16, Dtype::fp16, Dtype::fp32});
  in.q = v.input("q", "BTHK", in.dtype);
  in.k = v.input("k", "BTHK", in.dtype);
  in.v = v.input("v", "BTHV", in.dtype);
  in.o = v.output("o", "BTHV", in.dtype);
  v.require_size('K', 1, kHlaMaxK);
  v.require_size('V', 1, std::int64_t{1} << 30);
  return in;
}

}  // namespace larc::gpu::detail
