// kiln_simulate_driver: runs `kiln simulate` until the CLI subcommand exists.
//   kiln_simulate_driver --nodes N --bad-nodes K --bad-links L --noise F --seed S
//                        [--trials T] [--mode adaptive|full] [--json] [--story]
#include <cstdlib>
#include <iostream>
#include <string>

#include "coordinator/analysis/simulate.hpp"

int main(int argc, char** argv) {
  kiln::analysis::SimulateOptions opt;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "--nodes") opt.nodes = std::stoi(value());
      else if (a == "--bad-nodes") opt.bad_nodes = std::stoi(value());
      else if (a == "--bad-links") opt.bad_links = std::stoi(value());
      else if (a == "--noise") opt.noise = std::stod(value());
      else if (a == "--seed") opt.seed = std::stoull(value());
      else if (a == "--trials") opt.trials = std::stoi(value());
      else if (a == "--mode") opt.mode = value();
      else if (a == "--votes") opt.votes = std::stoi(value());
      else if (a == "--slow-factor") opt.slow_factor = std::stod(value());
      else if (a == "--json") opt.json = true;
      else if (a == "--story") opt.story = true;
      else throw std::invalid_argument("unknown option " + a);
    }
  } catch (const std::exception& e) {
    std::cerr << "kiln_simulate_driver: " << e.what() << "\n";
    return 2;
  }
  return kiln::analysis::run_simulate(opt, std::cout);
}
