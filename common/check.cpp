#include "common/check.hpp"

#include <sstream>

namespace kiln {

void throw_check(const char* what, const char* expr, const std::string& detail, const char* file,
                 int line) {
  std::ostringstream os;
  os << what << " failed: " << expr;
  if (!detail.empty()) os << ": " << detail;
  os << " (" << file << ":" << line << ")";
  throw CheckError(os.str());
}

}  // namespace kiln
