#include "slurm/parsers.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>
#include <limits>
#include <sstream>

#include "common/hostlist.hpp"
#include "slurm/slurm_error.hpp"

namespace kiln::slurm {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string shorten(const std::string& s) { return s.size() > 200 ? s.substr(0, 200) + "..." : s; }

[[noreturn]] void bad_output(const std::string& what, const std::string& text) {
  std::string one_line = shorten(text);
  std::replace(one_line.begin(), one_line.end(), '\n', ' ');
  throw SlurmError("cannot parse " + what + ": '" + one_line + "'");
}

int to_int(const std::string& s, const std::string& what) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) bad_output(what, s);
  return v;
}

// A count SLURM prints (nodes, CPUs, a switch level): never negative.
int to_count(const std::string& s, const std::string& what) {
  const int v = to_int(s, what);
  if (v < 0) bad_output(what, s);
  return v;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool all_of_chars(const std::string& s, bool (*ok)(char)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), ok);
}

bool is_cluster_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// Drops SLURM's " [user@time]" from the end of a node's reason: the last bracket pair, when it
// holds an '@' and closes the text, with the blanks before it. (A loop, not std::regex, whose
// recursion overflowed the stack on a reason of some 30,000 characters.)
std::string without_reason_suffix(const std::string& reason) {
  if (reason.empty() || reason.back() != ']') return reason;
  const auto prev_close = reason.size() < 2 ? std::string::npos : reason.rfind(']', reason.size() - 2);
  const auto open = reason.find('[', prev_close == std::string::npos ? 0 : prev_close + 1);
  if (open == std::string::npos || reason.find('@', open) == std::string::npos) return reason;
  std::size_t end = open;
  while (end > 0 && is_blank(reason[end - 1])) --end;
  return reason.substr(0, end);
}

// Adds a count to a total, refusing a sum past INT_MAX.
void add_count(int& total, int count, const std::string& line) {
  if (total > std::numeric_limits<int>::max() - count) bad_output("sinfo node count (too large)", line);
  total += count;
}

bool looks_like_key(const std::string& token) {
  auto eq = token.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  if (!std::isalpha(static_cast<unsigned char>(token[0]))) return false;
  for (std::size_t i = 0; i < eq; ++i) {
    unsigned char c = static_cast<unsigned char>(token[i]);
    if (!std::isalnum(c) && c != '_' && c != ':' && c != '/') return false;
  }
  return true;
}

// SLURM prints "(null)" and "None" for "nothing here".
std::string none_to_empty(const std::string& v) { return v == "(null)" || v == "None" ? "" : v; }

std::vector<std::string> expand_or_throw(const std::string& expr) {
  if (expr.empty() || expr == "(null)") return {};
  try {
    return kiln::hostlist::expand(expr);
  } catch (const std::exception& e) {
    throw SlurmError("bad hostlist '" + expr + "' in SLURM output: " + e.what());
  }
}

}  // namespace

std::string parse_job_id(const std::string& sbatch_stdout) {
  // One line, optionally newline-terminated; nothing around it.
  // (A loop, not std::regex, whose recursion overflowed the stack on 30,000 digits.)
  std::string s = sbatch_stdout;
  if (!s.empty() && s.back() == '\n') s.pop_back();
  const auto semi = s.find(';');
  const std::string id = s.substr(0, semi);
  const bool cluster_ok = semi == std::string::npos || all_of_chars(s.substr(semi + 1), is_cluster_char);
  if (!all_of_chars(id, is_digit) || id.size() > 20 || !cluster_ok)
    bad_output("job id from sbatch --parsable", sbatch_stdout);
  return id;
}

std::map<std::string, std::string> parse_key_values(const std::string& line) {
  std::map<std::string, std::string> kv;
  std::string key;
  std::istringstream in(line);
  std::string token;
  while (in >> token) {
    if (looks_like_key(token)) {
      auto eq = token.find('=');
      key = token.substr(0, eq);
      kv[key] = token.substr(eq + 1);
    } else if (!key.empty()) {
      auto& v = kv[key];
      if (!v.empty()) v += ' ';
      v += token;
    } else {
      bad_output("key=value line", line);
    }
  }
  return kv;
}

std::vector<JobStatus> parse_squeue(const std::string& text) {
  std::vector<JobStatus> jobs;
  for (const auto& line : lines_of(text)) {
    auto f = split(line, '|');
    // The reason is last and may itself hold a '|'-free but space- and comma-full text.
    if (f.size() < 4) bad_output("squeue line (want %i|%T|%N|%r)", line);
    for (std::size_t i = 4; i < f.size(); ++i) f[3] += "|" + f[i];
    JobStatus j;
    j.id = trim(f[0]);
    if (!all_of_chars(j.id, is_digit)) bad_output("squeue job id", line);
    j.state = trim(f[1]);
    j.phase = phase_of(j.state);
    j.nodes = none_to_empty(trim(f[2]));
    j.reason = none_to_empty(trim(f[3]));
    jobs.push_back(std::move(j));
  }
  return jobs;
}

JobStatus parse_scontrol_job(const std::string& text) {
  auto lines = lines_of(text);
  if (lines.size() != 1) bad_output("scontrol show job (want one line)", text);
  auto kv = parse_key_values(lines[0]);
  if (!kv.count("JobId") || !kv.count("JobState")) bad_output("scontrol show job (no JobId/JobState)", text);
  JobStatus j;
  j.id = kv["JobId"];
  j.state = kv["JobState"];
  j.phase = phase_of(j.state);
  j.reason = none_to_empty(kv["Reason"]);
  j.nodes = none_to_empty(kv["NodeList"]);
  // ExitCode=<status>:<signal>
  if (auto it = kv.find("ExitCode"); it != kv.end()) {
    auto parts = split(it->second, ':');
    if (parts.size() != 2) bad_output("ExitCode", it->second);
    j.exit_code = to_int(parts[0], "ExitCode");
    int sig = to_int(parts[1], "ExitCode signal");
    if (sig != 0) j.exit_signal = sig;
  }
  return j;
}

std::vector<std::string> parse_hostnames(const std::string& text) {
  std::vector<std::string> names;
  for (const auto& line : lines_of(text)) {
    std::string name = trim(line);
    // `scontrol show hostnames 'node[1-'` prints "node]" and exits 0: refuse such names.
    if (name.find_first_of("[] \t,") != std::string::npos) bad_output("host name from scontrol show hostnames", text);
    names.push_back(name);
  }
  return names;
}

std::vector<Switch> parse_topology(const std::string& text) {
  std::vector<Switch> switches;
  for (const auto& line : lines_of(text)) {
    auto kv = parse_key_values(line);
    if (!kv.count("SwitchName")) bad_output("scontrol show topology line", line);
    Switch s;
    s.name = kv["SwitchName"];
    if (kv.count("Level")) s.level = to_count(kv["Level"], "switch Level");
    s.link_speed = kv["LinkSpeed"];
    s.nodes_expr = none_to_empty(kv["Nodes"]);
    s.switches_expr = none_to_empty(kv["Switches"]);
    s.nodes = expand_or_throw(s.nodes_expr);
    s.switches = expand_or_throw(s.switches_expr);
    switches.push_back(std::move(s));
  }
  return switches;
}

std::vector<PartitionInfo> parse_sinfo(const std::string& text) {
  std::vector<PartitionInfo> parts;
  for (const auto& line : lines_of(text)) {
    auto f = split(line, '|');
    if (f.size() != 6) bad_output("sinfo line (want %R|%P|%a|%D|%T|%N)", line);
    const std::string name = trim(f[0]);
    auto it = std::find_if(parts.begin(), parts.end(), [&](const PartitionInfo& p) { return p.name == name; });
    if (it == parts.end()) {
      parts.push_back(PartitionInfo{});
      it = std::prev(parts.end());
      it->name = name;
    }
    std::string shown = trim(f[1]);
    if (!shown.empty() && shown.back() == '*') it->is_default = true;
    it->availability = trim(f[2]);
    const int count = to_count(trim(f[3]), "sinfo node count");
    add_count(it->total_nodes, count, line);
    add_count(it->nodes_by_state[trim(f[4])], count, line);
    for (auto& n : expand_or_throw(trim(f[5]))) it->nodes.push_back(std::move(n));
  }
  return parts;
}

int NodeInfo::gpus() const {
  const auto it = fields.find("Gres");
  if (it == fields.end()) return 0;
  long total = 0;
  std::string entry;
  std::istringstream in(it->second);
  while (std::getline(in, entry, ',')) {
    entry = entry.substr(0, entry.find('('));  // "(S:0-1)": the sockets, not a count
    if (entry.rfind("gpu:", 0) != 0) continue;
    const auto count = entry.substr(entry.rfind(':') + 1);
    if (count.empty() || count.size() > 6 || count.find_first_not_of("0123456789") != std::string::npos) continue;
    total += std::stol(count);
  }
  return static_cast<int>(std::min<long>(total, 1 << 20));
}

bool NodeInfo::has_flag(const std::string& f) const {
  return std::find(flags.begin(), flags.end(), f) != flags.end();
}

bool NodeInfo::usable() const {
  static const std::vector<std::string> kUp = {"IDLE", "MIXED", "ALLOCATED", "COMPLETING"};
  return std::find(kUp.begin(), kUp.end(), base_state) != kUp.end() && !drained() && responding() &&
         !has_flag("FAIL") && !has_flag("MAINTENANCE") && !has_flag("REBOOT_REQUESTED");
}

std::vector<NodeInfo> parse_nodes(const std::string& text) {
  std::vector<NodeInfo> nodes;
  for (const auto& line : lines_of(text)) {
    auto kv = parse_key_values(line);
    if (!kv.count("NodeName") || !kv.count("State")) bad_output("scontrol show node line", line);
    NodeInfo n;
    n.name = kv["NodeName"];
    n.state = kv["State"];
    auto words = split(n.state, '+');
    n.base_state = words[0];
    // sinfo-style '*' (not responding) or '~' suffixes do not appear in scontrol, but be safe.
    while (!n.base_state.empty() && !std::isalpha(static_cast<unsigned char>(n.base_state.back())))
      n.base_state.pop_back();
    n.flags.assign(words.begin() + 1, words.end());
    n.reason = without_reason_suffix(none_to_empty(kv["Reason"]));
    n.address = kv["NodeAddr"];
    n.hostname = kv["NodeHostName"];
    if (kv.count("CPUTot")) n.cpus = to_count(kv["CPUTot"], "CPUTot");
    if (auto p = none_to_empty(kv["Partitions"]); !p.empty()) n.partitions = split(p, ',');
    n.fields = std::move(kv);
    nodes.push_back(std::move(n));
  }
  return nodes;
}

namespace {

// "3", "0-1", "0-1,4": at most 4096 tasks per line (a line naming more is not read).
std::optional<std::vector<int>> task_list(std::string_view text) {
  std::vector<int> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const auto item = text.substr(0, comma);
    const auto dash = item.find('-');
    int first = 0, last = 0;
    const auto a = item.substr(0, dash);
    if (std::from_chars(a.data(), a.data() + a.size(), first).ec != std::errc{} || first < 0) return std::nullopt;
    last = first;
    if (dash != std::string_view::npos) {
      const auto b = item.substr(dash + 1);
      if (std::from_chars(b.data(), b.data() + b.size(), last).ec != std::errc{} || last < first) return std::nullopt;
    }
    if (out.size() + static_cast<std::size_t>(last - first) >= 4096) return std::nullopt;
    for (int t = first; t <= last; ++t) out.push_back(t);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return std::nullopt;  // "1,"
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// One "srun: error: NODE: task(s) LIST: HOW" line, or nullopt.
std::optional<TaskEnd> task_end_line(std::string_view line) {
  constexpr std::string_view kPrefix = "srun: error: ";
  if (line.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  line.remove_prefix(kPrefix.size());
  const auto colon = line.find(": task");
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  TaskEnd e;
  e.node = std::string(line.substr(0, colon));
  if (e.node.find(' ') != std::string::npos) return std::nullopt;  // "Node failure on node3" etc.
  line.remove_prefix(colon + 2);
  line.remove_prefix(line.substr(0, 6) == "tasks " ? 6 : line.substr(0, 5) == "task " ? 5 : line.size());
  const auto colon2 = line.find(": ");
  if (colon2 == std::string_view::npos) return std::nullopt;
  auto tasks = task_list(line.substr(0, colon2));
  if (!tasks) return std::nullopt;
  e.tasks = std::move(*tasks);
  e.how = trim(std::string(line.substr(colon2 + 2)));
  if (e.how.empty()) return std::nullopt;
  return e;
}

}  // namespace

namespace {

// Task-end lines up to the first tear-down line; torn: whether there was one.
std::vector<TaskEnd> task_ends_before_teardown(const std::string& job_output, bool& torn) {
  std::vector<TaskEnd> out;
  torn = false;
  for (const auto& line : lines_of(job_output)) {
    const std::string_view l(line);
    if (l.find("Job step aborted") != std::string_view::npos ||
        (l.find("*** STEP ") != std::string_view::npos && l.find(" CANCELLED") != std::string_view::npos)) {
      torn = true;
      break;
    }
    if (auto e = task_end_line(l)) out.push_back(std::move(*e));
  }
  return out;
}

}  // namespace

std::vector<TaskEnd> parse_first_task_ends(const std::string& job_output) {
  bool torn = false;
  auto out = task_ends_before_teardown(job_output, torn);
  if (!torn) return {};  // the step was not torn down: every task ended on its own
  return out;
}

std::vector<TaskEnd> parse_task_ends_so_far(const std::string& job_output) {
  bool torn = false;
  return task_ends_before_teardown(job_output, torn);
}

}  // namespace kiln::slurm
