#include "coordinator/user_job.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/channel.hpp"
#include "common/stats.hpp"
#include "common/text.hpp"

namespace kiln::coord {

namespace {

using json = nlohmann::json;

constexpr std::string_view kMetric = "KILN_METRIC";
constexpr std::string_view kExit = "KILN_EXIT ";

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-' || c == '/';
}

// A metric name or unit: short, and only characters that need no quoting anywhere kiln writes them.
bool good_word(const std::string& s, std::size_t max, bool may_be_empty) {
  if (s.size() > max || (s.empty() && !may_be_empty)) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return name_char(c) || c == '%'; });
}

bool all_digits(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// One line of at most kUserJobMaxLine bytes (the rest of a longer line is dropped, cut set);
// false at the end of the stream.
bool read_line(std::streambuf& buf, std::string& line, bool& cut) {
  line.clear();
  cut = false;
  bool any = false;
  for (int c = buf.sbumpc(); c != std::char_traits<char>::eof(); c = buf.sbumpc()) {
    any = true;
    if (c == '\n') return true;
    if (line.size() < kUserJobMaxLine) line.push_back(static_cast<char>(c));
    else cut = true;
  }
  return any;
}

// Splits "RANK<TAB>HOST<TAB>TEXT"; false when the line is not a task's.
bool split_task_line(const std::string& line, int& rank, std::string& host, std::string& text) {
  const auto t1 = line.find('\t');
  const auto t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
  if (t2 == std::string::npos || t1 == 0 || t1 > 5 || t2 == t1 + 1 || t2 - t1 - 1 > 255) return false;
  const std::string r = line.substr(0, t1);
  if (!all_digits(r)) return false;
  rank = std::stoi(r);
  host = line.substr(t1 + 1, t2 - t1 - 1);
  if (rank >= kUserJobMaxRanks || !good_word(host, 255, false)) return false;
  text = line.substr(t2 + 1);
  if (!text.empty() && text.back() == '\r') text.pop_back();
  return true;
}

// The name, value and unit of a KILN_METRIC line's JSON; throws std::invalid_argument.
void parse_metric_json(const std::string& body, std::string& name, double& value, std::string& unit) {
  json j;
  try {
    j = proto::parse_body(body, 4);
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("not a JSON object (") + e.what() + ")");
  }
  const auto n = j.find("name"), v = j.find("value"), u = j.find("unit");
  if (n == j.end() || !n->is_string() || !good_word(n->get<std::string>(), 64, false))
    throw std::invalid_argument("\"name\" must be a string of 1 to 64 characters [A-Za-z0-9_./-]");
  if (v == j.end() || !v->is_number()) throw std::invalid_argument("\"value\" must be a number (JSON has no NaN)");
  if (u != j.end() && (!u->is_string() || !good_word(u->get<std::string>(), 16, true)))
    throw std::invalid_argument("\"unit\" must be a string of at most 16 characters [A-Za-z0-9_./%-]");
  name = n->get<std::string>();
  value = v->get<double>();
  unit = u == j.end() ? "" : u->get<std::string>();
  if (!std::isfinite(value)) throw std::invalid_argument("\"value\" is not finite");
}

void add_sample(UserTask& t, const std::string& name, const std::string& unit, double value) {
  auto it = t.metrics.find(name);
  if (it == t.metrics.end()) {
    if (t.metrics.size() >= kUserJobMaxMetrics)
      throw std::invalid_argument("more than " + std::to_string(kUserJobMaxMetrics) + " metric names");
    it = t.metrics.emplace(name, std::make_pair(unit, std::vector<double>{})).first;
  }
  if (it->second.first != unit)
    throw std::invalid_argument("metric " + name + " changed its unit from '" + it->second.first + "' to '" + unit + "'");
  if (it->second.second.size() < kUserJobMaxSamples) it->second.second.push_back(value);
}

// One line a task printed: its exit, a metric, a --match hit, or anything else.
void task_text(UserTask& t, const std::string& text, bool cut, const std::vector<MatchRule>& rules) {
  if (text.rfind(kExit, 0) == 0) {
    const auto code = text.substr(kExit.size());
    if (code.empty() || code.size() > 3 || !all_digits(code) || std::stoi(code) > 255)
      throw std::invalid_argument("KILN_EXIT line without an exit status 0..255");
    t.exited = true;
    t.exit_code = std::stoi(code);
    return;
  }
  if (text.rfind(kMetric, 0) == 0) {
    if (cut) throw std::invalid_argument("KILN_METRIC line longer than " + std::to_string(kUserJobMaxLine) + " bytes");
    if (text.size() == kMetric.size() || (text[kMetric.size()] != ' ' && text[kMetric.size()] != '\t'))
      throw std::invalid_argument("KILN_METRIC must be followed by a space and a JSON object");
    std::string name, unit;
    double value = 0;
    parse_metric_json(text.substr(kMetric.size() + 1), name, value, unit);
    add_sample(t, name, unit, value);
    return;
  }
  if (text.size() > kUserJobMaxMatchLine) return;
  for (const auto& rule : rules) {
    std::smatch m;
    if (!std::regex_search(text, m, rule.re) || m.size() < 2) continue;
    const std::string number = m[1].str();
    char* end = nullptr;
    const double v = std::strtod(number.c_str(), &end);
    if (number.empty() || *end || !std::isfinite(v))
      throw std::invalid_argument("--match " + rule.name + ": '" + printable(number, 40) + "' is not a finite number");
    add_sample(t, rule.name, rule.unit, v);
  }
}

}  // namespace

MatchRule parse_match_rule(const std::string& rule) {
  const auto c1 = rule.find(':');
  const auto c2 = c1 == std::string::npos ? c1 : rule.find(':', c1 + 1);
  if (c2 == std::string::npos) throw std::invalid_argument("--match takes NAME:UNIT:REGEX (got '" + printable(rule, 80) + "')");
  MatchRule m{rule.substr(0, c1), rule.substr(c1 + 1, c2 - c1 - 1), {}, rule};
  if (!good_word(m.name, 64, false)) throw std::invalid_argument("--match: NAME must be 1 to 64 characters [A-Za-z0-9_./-]");
  if (!good_word(m.unit, 16, true)) throw std::invalid_argument("--match: UNIT must be at most 16 characters [A-Za-z0-9_./%-]");
  try {
    m.re = std::regex(rule.substr(c2 + 1), std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument("--match " + m.name + ": bad regex (" + e.what() + ")");
  }
  if (m.re.mark_count() < 1) throw std::invalid_argument("--match " + m.name + ": the regex needs a group around the number");
  return m;
}

UserJobLog parse_user_job_log(std::istream& in, const std::vector<MatchRule>& rules) {
  UserJobLog log;
  auto* buf = in.rdbuf();
  if (!buf) throw std::runtime_error("the task log cannot be read");
  std::string line, host, text;
  bool cut = false;
  while (read_line(*buf, line, cut)) {
    ++log.lines;
    log.cut_lines += cut ? 1 : 0;
    int rank = -1;
    if (!split_task_line(line, rank, host, text)) {
      ++log.foreign_lines;
      continue;
    }
    auto& t = log.tasks[rank];
    if (t.host.empty()) t.host = host;
    ++t.lines;
    try {
      task_text(t, text, cut, rules);
    } catch (const std::invalid_argument& e) {
      if (t.error.empty()) t.error = "log line " + std::to_string(log.lines) + ": " + e.what();
    }
  }
  return log;
}

namespace {

// Why a task did not pass, or "".
std::string task_failure(const UserTask* t) {
  if (!t) return "the task wrote nothing to the log (it never started, or its output was lost)";
  if (!t->error.empty()) return "broken metric output: " + t->error;
  if (!t->exited) return "the task ended without an exit status (killed, or the log was cut short)";
  if (t->exit_code != 0) return "the job exited with status " + std::to_string(t->exit_code);
  if (t->metrics.empty()) return "the job printed no KILN_METRIC line (and no --match rule matched)";
  return "";
}

}  // namespace

std::vector<Record> user_job_records(const UserJobLog& log, const std::string& test, int ranks, double seconds,
                                     std::int64_t round_id, double ts) {
  std::vector<Record> out;
  std::map<int, const UserTask*> tasks;
  for (int r = 0; r < ranks; ++r) tasks[r] = nullptr;
  for (const auto& [r, t] : log.tasks) tasks[r] = &t;
  for (const auto& [rank, t] : tasks) {
    const std::string host = t ? t->host : "";
    for (const auto& [name, figure] : t ? t->metrics : decltype(UserTask::metrics){}) {
      const auto& samples = figure.second;
      Result r;
      r.test = test, r.host = host, r.rank = rank, r.entity = {"rank", std::to_string(rank)};
      r.metric = name, r.value = stats::median(samples), r.unit = figure.first;
      r.round_id = round_id, r.group_id = 0, r.ts = ts;
      r.extra = {{"samples", samples.size()},
                 {"min", *std::min_element(samples.begin(), samples.end())},
                 {"max", *std::max_element(samples.begin(), samples.end())}};
      out.emplace_back(std::move(r));
    }
    const auto why = task_failure(t);
    CheckEnd e{test, host, rank, why.empty() ? Status::Pass : Status::Error, why, seconds, round_id, 0, ts};
    out.emplace_back(std::move(e));
  }
  return out;
}

}  // namespace kiln::coord
