#include "vla_inputs.h"

namespace larc::gpu::detail {

VlaInputs validate_vla(Validator& v, const LaunchArgs& args, const std::vector<Dtype>& dtypes) {
  VlaInputs in;
  in.dtype = v.dtype_of("q", dtypes);
  in.q = v.input("q", "BTHK", in.dtype);
  in.k = v.input("k", "BTHK", in.dtype);
  in.v = v.input("v", "BTHV", in.dtype);
  v.require(!args.inputs.contains("initial_state"),
            "takes no 'initial_state': VLA's memory is (Sᵀ, A, ζ) and a carried Sᵀ alone does not continue a sequence");
  in.o = v.output("o", "BTHV", in.dtype);
  in.final_state = v.output("final_state", "BHKV", Dtype::fp32, /*optional=*/true);
  v.require_size('K', 1, kVlaMaxK);
  v.require_size('V', 1, 0);
  return in;
}

}  // namespace larc::gpu::detail
