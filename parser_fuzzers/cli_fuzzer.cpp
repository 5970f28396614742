// libFuzzer target: the `larc` command line (tools/larc/app.h). An input is an argv: its arguments
// separated by NUL bytes. It is parsed by the program's own CLI11 app (every command over harness/ and
// fixtures/; not `claims` and `report`, which would link the whole claims library, though `claims`'
// --seed uses the same validator, option_checks.h) without running a command; then the values the
// commands parse themselves before running (--shape, --max-shape, --dtype, --shard, --mechanism,
// --knob) go through the same parsers. Every input either parses or throws CLI::ParseError or
// std::invalid_argument naming the value.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "app.h"
#include "knob_option.h"
#include "larc/harness/mechanism.h"
#include "larc/harness/shard.h"

namespace h = larc::harness;

namespace {
// The values of the parsed (sub)commands' options, as the commands read them.
void parse_values(const CLI::App& command) {
  std::vector<std::string> knobs, mechanisms;
  for (const CLI::Option* o : command.get_options()) {
    if (o->get_lnames().empty()) continue;
    const std::string& name = o->get_lnames().front();
    for (const std::string& v : o->results()) {
      if (name == "shape" || name == "max-shape") h::Shape::parse(v);
      if (name == "dtype") h::parse_dtype(v);
      if (name == "shard") h::parse_shard(v);
      if (name == "mechanism") mechanisms.push_back(v);
      if (name == "knob") knobs.push_back(v);
    }
  }
  const h::KnobValues k = larc::cli::parse_knobs(knobs);
  for (const std::string& m : mechanisms) h::find_mechanism(m).resolve_knobs(k);
  for (const CLI::App* sub : command.get_subcommands()) parse_values(*sub);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args{"larc"};
  std::string arg;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(arg);
      arg.clear();
    } else {
      arg.push_back(static_cast<char>(data[i]));
    }
  }
  args.push_back(arg);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());

  larc::cli::CommandLine cl;
  larc::cli::add_harness_commands(cl);
  try {
    cl.app.parse(static_cast<int>(argv.size()), argv.data());
    parse_values(cl.app);
  } catch (const CLI::ParseError&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
