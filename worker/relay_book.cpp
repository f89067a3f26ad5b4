#include "worker/relay_book.hpp"

#include <algorithm>

namespace kiln::worker {

void RelayBook::relayed(Who who, std::uint64_t local_seq, std::uint64_t conn_seq) {
  auto& r = ranks_[who];
  r.conn_of[local_seq] = conn_seq;
  r.last = {local_seq, conn_seq};
  queue_.push_back({conn_seq, who, local_seq});
}

void RelayBook::dropped(Who who, std::uint64_t local_seq) {
  auto& r = ranks_[who];
  r.cap = std::min(r.cap, local_seq - 1);
}

std::vector<std::pair<RelayBook::Who, std::uint64_t>> RelayBook::acked(std::uint64_t conn_seq) {
  std::map<Who, std::uint64_t> moved;
  while (!queue_.empty() && queue_.front().conn_seq <= conn_seq) {
    const auto e = queue_.front();
    queue_.pop_front();
    auto it = ranks_.find(e.who);
    if (it == ranks_.end()) continue;  // forgotten
    auto& r = it->second;
    r.conn_of.erase(e.local_seq);
    r.last_acked = {e.local_seq, e.conn_seq};
    const auto upto = std::min(e.local_seq, r.cap);
    if (upto > r.acked) moved[e.who] = r.acked = upto;
  }
  return {moved.begin(), moved.end()};
}

std::uint64_t RelayBook::done_seq(Who who, std::uint64_t local_last) const {
  if (local_last == 0) return 0;
  auto it = ranks_.find(who);
  if (it == ranks_.end()) return 0;
  const auto& r = it->second;
  if (local_last >= r.last.first) return r.last.second;
  // An earlier record (a done always names the last one, so this is only for safety): the latest
  // record at or before it, pending or acknowledged.
  auto c = r.conn_of.upper_bound(local_last);
  if (c != r.conn_of.begin()) return std::prev(c)->second;
  return r.last_acked.first <= local_last ? r.last_acked.second : 0;
}

void RelayBook::forget(Who who) { ranks_.erase(who); }

}  // namespace kiln::worker
