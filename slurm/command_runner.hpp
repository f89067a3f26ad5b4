// The command runner lives in common/ (the worker's checks run commands too); slurm/ uses it under
// its own namespace.
#pragma once

#include "common/command_runner.hpp"

namespace kiln::slurm {
using kiln::CommandResult;
using kiln::CommandRunner;
using kiln::format_argv;
using kiln::ProcessRunner;
}  // namespace kiln::slurm
