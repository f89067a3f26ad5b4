// A CommandRunner for unit tests that replays output captured from the real testbed
// (tests/data/slurm/*.json, written by tests/cluster/capture-slurm-data), keyed by exact argv.
#pragma once

#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>

#include "slurm/command_runner.hpp"

namespace kiln::slurm {

// Thrown when a test's code runs a command nobody recorded: the test, not SLURM, is wrong.
struct UnexpectedCommand : std::logic_error {
  using std::logic_error::logic_error;
};

class FakeRunner final : public CommandRunner {
 public:
  // Loads one capture: {"argv": [...], "exit_code": n, "stdout": "...", "stderr": "..."}.
  // Returns its argv. Several results for the same argv are replayed in order; the last repeats.
  std::vector<std::string> add_capture(const std::filesystem::path& json_file);
  void add(std::vector<std::string> argv, CommandResult result);

  CommandResult run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) override;

  // Every argv run so far, in order.
  std::vector<std::vector<std::string>> calls() const;
  std::size_t count(const std::vector<std::string>& argv) const;

 private:
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::deque<CommandResult>> replies_;
  std::vector<std::vector<std::string>> calls_;
};

}  // namespace kiln::slurm
