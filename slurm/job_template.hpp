// Job scripts from templates (jobs/*.sbatch.in): {{name}} placeholders replaced by values.
#pragma once

#include <map>
#include <stdexcept>
#include <string>

namespace kiln::slurm {

struct TemplateError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Replaces every {{name}} (spaces inside the braces allowed: {{ name }}) with values.at(name).
// A placeholder without a value, a malformed name or an unclosed "{{" throws TemplateError naming
// it and its line: a job script with a hole in it must never reach sbatch. Values are inserted
// verbatim; quote them for the shell with shell_quote() where the template expects a shell word.
std::string render_template(const std::string& text, const std::map<std::string, std::string>& values);

// One shell word that bash reads back as exactly s: 'it'\''s' style single quoting.
std::string shell_quote(const std::string& s);

}  // namespace kiln::slurm
