#pragma once

#include <nlohmann/json.hpp>

#include "worker/check.hpp"

namespace kiln::worker {

// Gathers this rank's NodeInfo (collective over MPI_COMM_WORLD: call from every rank).
NodeInfo gather_node_info();

}  // namespace kiln::worker
