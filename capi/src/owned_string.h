// A string handed across the C interfaces (include/larc/c/larc.h, larc_gpu.h): a malloc'd copy the
// caller owns and gives back to the library's *_string_free, which frees it with std::free.
#pragma once

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace larc::c {

inline char* owned_string(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (!out) throw std::bad_alloc();
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

}  // namespace larc::c
