#include "log_linear_inputs.h"

#include <algorithm>
#include <string>

namespace larc::gpu::detail {

LogLinearInputs validate_log_linear(Validator& v, const LaunchArgs& args, bool gdn, std::int64_t max_T, LogLinearPass pass) {
  LogLinearInputs in;
  in.dtype = v.dtype_of("q", {Dtype::bf16, Dtype::fp16, Dtype::fp32});
  const char* qk = gdn ? "BTHK" : "BT1K";
  in.q = v.input("q", qk, in.dtype);
  in.k = v.input("k", qk, in.dtype);
  in.v = v.input("v", "BTHV", in.dtype);
  in.g = v.input("g", "BTH", in.dtype);
  if (gdn) in.beta = v.input("beta", "BTH", in.dtype);
  in.level_scales = v.input("level_scales", "BTHL", in.dtype);
  if (pass == LogLinearPass::forward) {
    in.o = v.output("o", "BTHV", in.dtype);
  } else {
    in.d_o = v.input("do", "BTHV", in.dtype);
    in.dq = v.output("dq", qk, in.dtype);
    in.dk = v.output("dk", qk, in.dtype);
    in.dv = v.output("dv", "BTHV", in.dtype);
    in.dg = v.output("dg", "BTH", in.dtype);
    in.dlevel_scales = v.output("dlevel_scales", "BTHL", in.dtype);
    if (gdn) in.dbeta = v.output("dbeta", "BTH", in.dtype);
    in.dinitial_level_states = v.output("dinitial_level_states", "BHLKV", Dtype::fp32, true);
  }
  // The mechanisms have no state in or out: a carried state would be the whole level stack and the
  // token count, which no tensor of theirs holds. The mechanisms' own start (a sequence continued after
  // t0 tokens) is not taken either.
  v.require(!args.inputs.contains("initial_state"),
            "takes no 'initial_state' (log-linear attention carries a Fenwick stack of level states)");
  v.require(!args.outputs.contains("final_state"), "writes no 'final_state' (the mechanism outputs o only)");
  for (const char* start : {"start_offset", "initial_level_states"})
    v.require(!args.inputs.contains(start), std::string("takes no '") + start +
                                                "' (no continued sequence: the kernels start from an empty level stack)");
  v.require_size('K', 1, 128);
  v.require_size('V', 1, 0);
  v.require_size('T', 0, max_T);
  const std::int64_t T = v.size('T');
  in.levels = T > 0 && T <= max_T ? fenwick_level_count(T) : 0;
  if (v.ok() && T > 0)
    v.require(v.size('L') >= in.levels, "input 'level_scales' has L = " + std::to_string(v.size('L')) +
                                            " levels; T = " + std::to_string(T) + " needs ceil(log2 T) + 1 = " +
                                            std::to_string(in.levels));
  return in;
}

LogLinearChunking chunking_of(Validator& v, int level_tile, int out_tile) {
  LogLinearChunking c;
  const std::int64_t BH = v.size('B') * v.size('H'), V = v.size('V');
  c.chunks = (v.size('T') + kLogLinearChunk - 1) / kLogLinearChunk;
  c.level_tiles = (V + level_tile - 1) / level_tile;
  c.out_tiles = (V + out_tile - 1) / out_tile;
  c.chunk_levels = c.chunks > 1 ? fenwick_level_count(c.chunks) - 1 : 0;
  v.require_grid(std::max(BH * c.chunks * c.out_tiles, BH * c.level_tiles));
  return c;
}

}  // namespace larc::gpu::detail
