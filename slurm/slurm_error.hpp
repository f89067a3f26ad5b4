#pragma once

#include <stdexcept>
#include <string>

namespace kiln::slurm {

// A SLURM command failed (after its one retry) or printed something we refuse to guess about.
// what() is one line naming the command and its stderr, fit for a log line or a report.
struct SlurmError : std::runtime_error {
  SlurmError(std::string command, int exit_code, std::string stderr_text, const std::string& message)
      : std::runtime_error(message),
        command(std::move(command)),
        exit_code(exit_code),
        stderr_text(std::move(stderr_text)) {}
  explicit SlurmError(const std::string& message) : std::runtime_error(message) {}

  std::string command;  // argv as one line, empty when not about one command
  int exit_code = -1;
  std::string stderr_text;
};

}  // namespace kiln::slurm
