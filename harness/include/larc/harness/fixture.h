// larc's fixture layout on top of the safetensors format (fixtures/safetensors.h; DESIGN.md
// "Fixtures"; docs/gate.md gives the full schema). A fixture holds one prepared case:
//   inputs          under the mechanism's input names ("q", "k", "v", "g", "beta", ...), in the
//                   case's dtype (BF16, F16, F32 or F64), FLA's layout;
//   "oracle.NAME"   each output of the oracle in F64 (NAME = "o", "final_state", ...);
//   "oracle_error.NAME"  F64 [slices]: per timestep (one slice for final states) the 2-norm of the
//                   oracle's error estimate;
//   __metadata__    format = "larc-fixture/1", mechanism, dtype, shape "B,T,H,K,V", seed, knobs and
//                   parameters (JSON), oracle_precision, oracle_error_method, larc_version, origin
//                   and, when given, generated_by (the command that wrote it).
// Reading validates everything a case needs and throws fixtures::FixtureError naming the file, the
// tensor and what is wrong.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "larc/fixtures/safetensors.h"
#include "larc/harness/runner.h"

namespace larc::harness {

inline constexpr const char* kFixtureFormat = "larc-fixture/1";

// Writes `prepared` (inputs, oracle, estimate) and its metadata, plus `extra` metadata entries.
void write_fixture(const std::filesystem::path& path, const PreparedCase& prepared,
                   const std::map<std::string, std::string>& extra = {});
// Reads and validates a fixture; spec.origin is the path, spec.subject empty.
PreparedCase read_fixture(const std::filesystem::path& path);
// Validates a parsed safetensors file as a fixture (read_fixture without the reading; spec.origin is
// file.source). A file of another format version (e.g. written by a later larc) is refused naming
// "format", the version found and the larc that wrote it.
PreparedCase parse_fixture(const fixtures::SafetensorsFile& file);
// Every "*.safetensors" file under the given files and directories (recursively), sorted; a path
// that does not exist throws fixtures::FixtureError naming it.
std::vector<std::filesystem::path> fixture_files(const std::vector<std::string>& paths);

// A kernel's outputs for `larc diff`: every float tensor of a safetensors file (F64, F32, F16, BF16).
TensorMap read_candidate(const std::filesystem::path& path);

// The version larc was built as (CMake's project version).
std::string larc_version();

}  // namespace larc::harness
