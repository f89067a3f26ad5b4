// Check macros that carry the failing expression and file:line, and throw so that the caller
// (the worker's runner) can report the failure as a result before anything exits.
#pragma once

#include <stdexcept>
#include <string>

namespace kiln {

struct CheckError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_check(const char* what, const char* expr, const std::string& detail,
                              const char* file, int line);

}  // namespace kiln

#define KILN_CHECK(cond, msg)                                                        \
  do {                                                                               \
    if (!(cond)) ::kiln::throw_check("check", #cond, (msg), __FILE__, __LINE__);     \
  } while (0)
