// kiln_simulate_driver: `kiln simulate` without building the rest of the coordinator.
//   kiln_simulate_driver [--model NAME] [--nodes N] ... [--json] [--story]
// Takes the same options as `kiln simulate` (see its --help), each as `--flag value`.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/analysis/simulate.hpp"

int main(int argc, char** argv) {
  kiln::analysis::SimulateOptions opt;
  try {
    std::vector<std::pair<std::string, std::string>> given;
    bool json = false, story = false;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--json") json = true;
      else if (a == "--story") story = true;
      else if (a.rfind("--", 0) != 0 || i + 1 >= argc) throw std::invalid_argument(a + ": expected --flag value");
      else given.emplace_back(a.substr(2), argv[++i]);
    }
    opt = kiln::analysis::parse_simulate_options(given);
    opt.json = json, opt.story = story;
    if (!opt.topology_conf.empty()) {
      std::ifstream conf(opt.topology_conf);
      if (!conf) throw std::invalid_argument("cannot read --topology-conf " + opt.topology_conf);
      std::ostringstream text;
      text << conf.rdbuf();
      opt.topology_text = text.str();
    }
  } catch (const std::exception& e) {
    std::cerr << "kiln_simulate_driver: " << e.what() << "\n";
    return 2;
  }
  return kiln::analysis::run_simulate(opt, std::cout);
}
