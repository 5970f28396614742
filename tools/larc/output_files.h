// Report files of the gate-side commands (gate, diff, fixtures gen, fuzz, merge): checked before a
// run starts and written through a temporary file and a rename, so a killed run never leaves half a
// report.
#pragma once

#include <string>

namespace larc::cli {

// True when `path` is empty or can be created; otherwise prints "larc COMMAND: OPTION: cannot write
// PATH (reason)" to stderr and returns false (the caller exits 2).
bool can_write(const std::string& command, const std::string& option, const std::string& path);
// Writes `text` to `path` atomically; throws std::runtime_error naming the path.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace larc::cli
