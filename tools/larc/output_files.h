// Report files of the commands (claims, gate, diff, fuzz, merge): checked before a run starts and
// written atomically (larc/fixtures/atomic_file.h), so a killed run never leaves half a report.
#pragma once

#include <string>

namespace larc::cli {

// True when `path` is empty or can be created; otherwise prints "larc COMMAND: OPTION: cannot write
// PATH (reason)" to stderr and returns false (the caller exits 2).
bool can_write(const std::string& command, const std::string& option, const std::string& path);
// Writes `text` to `path` atomically; throws std::runtime_error naming the path and the reason.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace larc::cli
