// Runs a pair check on a group of any size: for each pairing of the schedule (pairings.hpp) the
// group is split into one two-member communicator per pair, and the check's pair body runs on it
// with a pair Context (group_size 2, group rank 0 for the lower member, the pair's world ranks).
// All pairs of a pairing run at the same time. A group of exactly two runs the body once on its
// own communicator.
//
// The split is a blocking collective over the group, so every pairing starts with a roll call
// bounded by the deadline (mpi_deadline::Exchanger::barrier): a member that is gone or stuck in an
// earlier pair makes the others TIMEOUT instead of hanging. A body that throws anything but
// DeadlineExceeded costs its pair an ERROR result naming the pairing and the partner; the member
// goes on with the next pairing.
#pragma once

#include <functional>

#include "worker/check.hpp"

namespace kiln::worker {

void run_pairings(Context& ctx, ResultSink& sink, int pairings, const std::function<void(Context& pair)>& body);

}  // namespace kiln::worker
