// Starting the workers again after a round left MPI state untrusted (coordinator/restart.hpp):
// every worker is told to exit, the launch ends, the launcher starts the workers again, and the
// same ranks say hello again. A rank that was alive is never lost because of a restart; one that
// does not come back is.
#include <spdlog/spdlog.h>

#include "coordinator/campaign.hpp"
#include "coordinator/restart.hpp"
#include "coordinator/server.hpp"

namespace kiln::coord {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {
// How long the workers have to leave, and the launch to end, before it is stopped for good.
constexpr auto kLeaveGrace = std::chrono::seconds(20);
}  // namespace

void Campaign::restart_if_untrusted(const RoundRecord& rr) {
  if (!launch_req_ || stopping()) return;
  RestartContext ctx{restarts_, kMaxRestarts, launcher_.name(), launcher_.can_relaunch(), restart_refusal_said_};
  const auto d = decide_restart(rr.round.id, rr.ends, ctx);
  if (d.line.empty()) return;
  progress(d.line);
  if (!d.restart) {
    restart_refusal_said_ = true;
    return;
  }
  const auto live = live_ranks();
  ++restarts_;
  json ev = {{"round", rr.round.id}, {"untrusted", d.untrusted}, {"restart", restarts_}, {"ranks", live}};
  journal("restart", ev, true);
  ev["session"] = session_;  // as the journal holds it, so that kiln report shows the same
  restarts_now_.push_back(std::move(ev));
  restarting_ = true;
  for (auto session : sessions_of(live)) server_->send(session, proto::wrap(proto::Bye{"restart", true}));
  // Workers leave once their last result is acknowledged (pump acknowledges).
  for (const auto until = Clock::now() + kLeaveGrace; live_ > 0 && Clock::now() < until;)
    pump(std::min(until, Clock::now() + std::chrono::milliseconds(200)));
  for (int r : live) lose(ranks_.at(r), "bye");  // gone, or about to be stopped with the launch
  pump(Clock::now());
  // The new step numbers its ranks afresh: where a node is gone, the ranks after it move down. Each
  // rank keeps its name by the place it runs on (host and local rank).
  ResultServer::RankPlaces places;
  for (const auto& [r, st] : ranks_)
    if (st.joined) places[{st.host, st.info.local_rank}] = r;
  server_->rename_ranks(std::move(places));
  try {
    launcher_.relaunch(*launch_req_, kLeaveGrace);
  } catch (const std::exception& e) {
    restarting_ = false;
    launch_end_ = LaunchEnd{false, std::string("could not start the workers again: ") + e.what()};
    progress(launch_end_->state);
    return;
  }
  journal_launched();
  rejoin(live);
}

// Waits for the ranks that were live before the restart; those that do not come back are lost.
void Campaign::rejoin(const std::set<int>& live) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(opts_.connect_timeout_s));
  const auto back = [&] {
    for (int r : live)
      if (ranks_.at(r).lost) return false;
    return true;
  };
  while (!back() && Clock::now() < deadline && !stopping()) {
    pump(std::min(deadline, Clock::now() + std::chrono::milliseconds(200)));
    if (!launch_end_) launch_end_ = launcher_.poll();
    if (launch_end_) break;
  }
  restarting_ = false;
  for (int r : live) {
    auto& st = ranks_.at(r);
    if (!st.lost) continue;
    st.lost = false;  // lose() counts only a rank that was live
    ++live_;
    lose(st, "did not connect again after restart " + std::to_string(restarts_));
    progress("lost rank " + std::to_string(r) + " on " + st.host + ": " + st.lost_reason);
  }
  journal_losses();
  progress("restart " + std::to_string(restarts_) + ": " + std::to_string(live_) + " of " +
           std::to_string(live.size()) + " ranks back");
}

}  // namespace kiln::coord
