// A user's own job's task log read into records (coordinator/user_job.cpp): the contract's lines,
// the --match fallback, and hostile logs that must give a reason, never a crash or a pass.
#include <catch2/catch.hpp>

#include <sstream>

#include "coordinator/user_job.hpp"

using namespace kiln;
using namespace kiln::coord;

namespace {

UserJobLog parse(const std::string& text, const std::vector<MatchRule>& rules = {}) {
  std::istringstream in(text);
  return parse_user_job_log(in, rules);
}

std::string metric(int rank, const std::string& body) {
  return std::to_string(rank) + "\tn1\tKILN_METRIC " + body + "\n";
}

// The end record of each rank, by rank.
std::map<int, CheckEnd> ends_of(const std::vector<Record>& recs) {
  std::map<int, CheckEnd> out;
  for (const auto& r : recs)
    if (const auto* e = std::get_if<CheckEnd>(&r)) out[e->rank] = *e;
  return out;
}

}  // namespace

TEST_CASE("user job: each task's metric is the median of its values, the end pass", "[user_job]") {
  const auto log = parse(metric(0, R"({"name":"tokens_per_s","value":10,"unit":"tok/s"})") +
                         metric(0, R"({"name":"tokens_per_s","value":30,"unit":"tok/s"})") +
                         metric(0, R"({"name":"tokens_per_s","value":14,"unit":"tok/s"})") +
                         "0\tn1\tepoch 1 done\nsrun: a line of srun's own\n0\tn1\tKILN_EXIT 0\n");
  CHECK(log.foreign_lines == 1);
  const auto recs = user_job_records(log, "model.user_job", 1, 5.0, 1, 100.0);
  REQUIRE(recs.size() == 2);
  const auto& r = std::get<Result>(recs[0]);
  CHECK(r.value == 14);
  CHECK(r.unit == "tok/s");
  CHECK(r.host == "n1");
  CHECK(r.extra.at("samples") == 3);
  CHECK(r.extra.at("max") == 30.0);
  CHECK(ends_of(recs).at(0).status == Status::Pass);
}

TEST_CASE("user job: a non-zero exit, no metric, no exit line or no output is an error", "[user_job]") {
  const auto log = parse(metric(0, R"({"name":"x","value":1})") + "0\tn1\tKILN_EXIT 3\n" +
                         "1\tn1\thello\n1\tn1\tKILN_EXIT 0\n" + metric(2, R"({"name":"x","value":1})"));
  const auto ends = ends_of(user_job_records(log, "model.user_job", 4, 0, 1, 0));
  REQUIRE(ends.size() == 4);
  CHECK(ends.at(0).status == Status::Error);
  CHECK(ends.at(0).reason == "the job exited with status 3");
  CHECK_THAT(ends.at(1).reason, Catch::Contains("no KILN_METRIC line"));
  CHECK_THAT(ends.at(2).reason, Catch::Contains("without an exit status"));
  CHECK_THAT(ends.at(3).reason, Catch::Contains("wrote nothing"));
}

TEST_CASE("user job: broken metric lines give the task an error naming the line", "[user_job]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"name":"x","value":NaN})", "not a JSON object"},
      {R"({"name":"x","value":"12"})", "must be a number"},
      {R"({"name":"x","value":1e999})", "not"},
      {R"({"name":"a b","value":1})", "\"name\""},
      {R"([1,2])", "not a JSON object"},
      {std::string(20, '[') + std::string(20, ']'), "deeper than 4"},
      {R"({"name":"x","value":1,"unit":")" + std::string(100000, 'u') + "\"}", "longer than 16384"},
  };
  for (const auto& [body, why] : cases) {
    INFO(body.substr(0, 60));
    const auto log = parse("0\tn1\tok\n" + metric(0, body) + "0\tn1\tKILN_EXIT 0\n");
    const auto ends = ends_of(user_job_records(log, "model.user_job", 1, 0, 1, 0));
    CHECK(ends.at(0).status == Status::Error);
    CHECK_THAT(ends.at(0).reason, Catch::Contains("log line 2") && Catch::Contains(why));
  }
}

TEST_CASE("user job: a unit that changes, and bounded names, ranks and lines", "[user_job]") {
  auto log = parse(metric(0, R"({"name":"x","value":1,"unit":"s"})") + metric(0, R"({"name":"x","value":1,"unit":"ms"})"));
  CHECK_THAT(log.tasks.at(0).error, Catch::Contains("changed its unit"));
  std::string many;
  for (int i = 0; i < 40; ++i) many += metric(0, R"({"name":"m)" + std::to_string(i) + R"(","value":1})");
  CHECK_THAT(parse(many).tasks.at(0).error, Catch::Contains("more than 32 metric names"));
  log = parse("99999999\tn1\tKILN_EXIT 0\n70000\tn1\tx\n\tn1\tx\n0\t\tx\n0\tn 1\tx\n");
  CHECK(log.tasks.empty());
  CHECK(log.foreign_lines == 5);
  CHECK(parse(std::string(1 << 20, 'a') + "\n").cut_lines == 1);
}

TEST_CASE("user job: --match takes the first group's number, and refuses bad rules", "[user_job]") {
  const std::vector<MatchRule> rules = {parse_match_rule("tokens_per_s:tok/s:throughput ([0-9.e+-]+)")};
  auto log = parse("0\tn1\tthroughput 250.5 tok/s\n0\tn1\tthroughput 1e999\n", rules);
  CHECK(log.tasks.at(0).metrics.at("tokens_per_s").second == std::vector<double>{250.5});
  CHECK_THAT(log.tasks.at(0).error, Catch::Contains("not a finite number"));
  log = parse("0\tn1\tthroughput 7 " + std::string(5000, 'x') + "\n", rules);
  CHECK(log.tasks.at(0).metrics.empty());  // past kUserJobMaxMatchLine: not searched
  CHECK_THROWS_WITH(parse_match_rule("x:s:abc"), Catch::Contains("group"));
  CHECK_THROWS_WITH(parse_match_rule("x:s:(["), Catch::Contains("bad regex"));
  CHECK_THROWS_WITH(parse_match_rule("x"), Catch::Contains("NAME:UNIT:REGEX"));
  CHECK_THROWS_WITH(parse_match_rule("a b:s:(1)"), Catch::Contains("NAME"));
}
