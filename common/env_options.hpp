// Every command-line option of a kiln binary can also come from the environment: KILN_<NAME>
// sets --<name> (upper case, dashes as underscores). Other KILN_ variables (KILN_FAULT, ...) are
// left alone rather than refused as unknown options.
#pragma once

#include <boost/program_options.hpp>

#include <cctype>
#include <functional>
#include <string>

namespace kiln {

inline std::function<std::string(std::string)> env_option_mapper(
    const boost::program_options::options_description& desc) {
  return [&desc](const std::string& env) -> std::string {
    if (env.rfind("KILN_", 0) != 0) return {};
    std::string name = env.substr(5);
    for (auto& c : name) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return desc.find_nothrow(name, false) ? name : std::string();
  };
}

}  // namespace kiln
