// Writes the bad inputs of the CLI rows of tests/cli/bad_input_matrix.cmake into a folder: the fixtures of
// bad_fixtures.h (DIR/<row>.safetensors, with the refusal they must get in DIR/<row>.message) and
// good.safetensors, wrong_o_candidate.safetensors (an
// output of the wrong shape for `larc diff`) and not_a_report.json (for `larc fuzz --resume`).
#include <iostream>

#include "bad_fixtures.h"
#include "larc/fixtures/atomic_file.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: bad_fixture_writer DIR\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const larc::fixtures::SafetensorsFile good = larc::testing::good_fixture(dir);
  for (const larc::testing::BadFixture& row : larc::testing::bad_fixtures()) {
    larc::fixtures::SafetensorsFile f = good;
    row.corrupt(f);
    larc::fixtures::write_safetensors(dir / (row.name + ".safetensors"), f);
    larc::fixtures::write_file_atomically(dir / (row.name + ".message"), larc::testing::refusal(row));
  }
  larc::fixtures::SafetensorsFile candidate;
  candidate.tensors["o"] = larc::fixtures::TensorData::from_doubles(larc::fixtures::Dtype::fp32, {1, 5, 1, 3},
                                                                      std::vector<double>(15, 0.0));
  larc::fixtures::write_safetensors(dir / "wrong_o_candidate.safetensors", candidate);
  larc::fixtures::write_file_atomically(dir / "not_a_report.json", "not JSON\n");
  return 0;
}
