#include "output_files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "larc/fixtures/atomic_file.h"

namespace larc::cli {

bool can_write(const std::string& command, const std::string& option, const std::string& path) {
  if (path.empty()) return true;
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    std::cerr << "larc " << command << ": " << option << ": cannot write " << path << " (" << std::strerror(errno) << ")\n";
    return false;
  }
  std::fclose(f);
  std::remove(tmp.c_str());
  return true;
}

void write_text_file(const std::string& path, const std::string& text) { fixtures::write_file_atomically(path, text); }

}  // namespace larc::cli
