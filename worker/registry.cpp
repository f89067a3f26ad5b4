#include <algorithm>
#include <stdexcept>

#include "worker/check.hpp"

namespace kiln::worker {

const CheckSpec& Check::spec() const {
  const auto* s = find_check(key());
  if (!s) throw std::logic_error("check '" + key() + "' has no declaration in common/checks.cpp");
  return *s;
}

Registry& Registry::instance() {
  static Registry r;
  return r;
}

void Registry::add(Factory f) { factories_.push_back(std::move(f)); }

std::unique_ptr<Check> Registry::create(const std::string& key) const {
  for (const auto& f : factories_) {
    auto t = f();
    if (t->key() == key) return t;
  }
  return nullptr;
}

std::vector<std::string> Registry::keys() const {
  std::vector<std::string> out;
  for (const auto& f : factories_) out.push_back(f()->key());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kiln::worker
