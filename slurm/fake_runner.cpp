#include "slurm/fake_runner.hpp"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

namespace kiln::slurm {

std::vector<std::string> FakeRunner::add_capture(const std::filesystem::path& json_file) {
  std::ifstream in(json_file);
  if (!in) throw std::runtime_error("cannot open capture " + json_file.string());
  const auto j = nlohmann::json::parse(in);
  CommandResult r;
  r.exit_code = j.at("exit_code").get<int>();
  r.out = j.at("stdout").get<std::string>();
  r.err = j.at("stderr").get<std::string>();
  auto argv = j.at("argv").get<std::vector<std::string>>();
  add(argv, std::move(r));
  return argv;
}

void FakeRunner::add(std::vector<std::string> argv, CommandResult result) {
  std::lock_guard lock(mu_);
  replies_[std::move(argv)].push_back(std::move(result));
}

CommandResult FakeRunner::run(const std::vector<std::string>& argv, std::chrono::milliseconds) {
  std::lock_guard lock(mu_);
  calls_.push_back(argv);
  auto it = replies_.find(argv);
  if (it == replies_.end() || it->second.empty())
    throw UnexpectedCommand("FakeRunner: no recorded output for: " + format_argv(argv));
  CommandResult r = it->second.front();
  if (it->second.size() > 1) it->second.pop_front();
  return r;
}

std::vector<std::vector<std::string>> FakeRunner::calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

std::size_t FakeRunner::count(const std::vector<std::string>& argv) const {
  std::lock_guard lock(mu_);
  return static_cast<std::size_t>(std::count(calls_.begin(), calls_.end(), argv));
}

}  // namespace kiln::slurm
