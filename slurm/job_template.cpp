#include "slurm/job_template.hpp"

#include <algorithm>
#include <cctype>

namespace kiln::slurm {

namespace {

bool valid_name(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

std::string render_template(const std::string& text, const std::map<std::string, std::string>& values) {
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (true) {
    auto open = text.find("{{", pos);
    if (open == std::string::npos) {
      out.append(text, pos, std::string::npos);
      return out;
    }
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(open), '\n');
    auto close = text.find("}}", open + 2);
    auto newline = text.find('\n', open);
    if (close == std::string::npos || (newline != std::string::npos && newline < close))
      throw TemplateError("template line " + std::to_string(line) + ": '{{' without '}}' on the same line");
    const std::string name = trim(text.substr(open + 2, close - open - 2));
    if (!valid_name(name))
      throw TemplateError("template line " + std::to_string(line) + ": bad placeholder name '" + name + "'");
    auto it = values.find(name);
    if (it == values.end())
      throw TemplateError("template line " + std::to_string(line) + ": no value for placeholder '{{" + name + "}}'");
    out.append(text, pos, open - pos);
    out += it->second;
    pos = close + 2;
  }
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

}  // namespace kiln::slurm
