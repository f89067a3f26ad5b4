// report.html: every string from the run is escaped, and each section holds one row or cell per
// thing the report names (the integration test opens the page in a browser).
#include <catch2/catch.hpp>

#include <string>

#include "common/findings.hpp"
#include "coordinator/report_html.hpp"

using namespace kiln;
using namespace kiln::coord;

namespace {

std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

const std::string hostile = "<img src=x onerror=alert(1)>\"node";

Report three_nodes() {
  Report r;
  r.run_id = "run-1";
  r.verdict = "fail";
  r.launcher = "local";
  for (int i = 0; i < 3; ++i) {
    const std::string host = i == 2 ? hostile : "n" + std::to_string(i);
    NodeRow n;
    n.host = host;
    n.ranks = {i};
    n.info.gpu_count = 2;
    r.nodes.push_back(n);
    RankRow k;
    k.rank = i;
    k.host = host;
    k.state = "ok";
    r.ranks.push_back(k);
  }
  r.findings.push_back(make_finding(Code::NodeSlow, {"node", hostile}, "slow <b>node</b>", {{"slowness", 3.5}}));
  r.findings.push_back(make_finding(Code::LinkSlow, {"link", "n0<->n1"}, "slow link"));
  RoundRow round;
  round.id = 1;
  round.phase = "localize";
  round.groups = {{0, 1}, {2}};
  round.duration_s = 2;
  round.reason = "bisect <x>";
  r.rounds.push_back(round);
  r.checks_by_test["mpi.alltoall"] = {{"pass", 2}, {"fail", 1}};
  return r;
}

Result busbw(int rank, const std::string& host, double value, std::int64_t size) {
  Result res;
  res.test = "mpi.alltoall";
  res.rank = rank;
  res.host = host;
  res.entity = {"rank", std::to_string(rank)};
  res.metric = "busbw";
  res.unit = "GB/s";
  res.value = value;
  res.round_id = 1;
  res.group_id = 0;
  res.size_bytes = size;
  return res;
}

}  // namespace

TEST_CASE("html_escape leaves no markup and drops control characters", "[report_html]") {
  CHECK(html_escape("<script>alert('x')</script> & \"q\"") ==
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
  CHECK(html_escape(std::string("a\x01" "b\x1b[0m")) == "ab[0m");
  CHECK(html_escape("node1\tgpu0") == "node1\tgpu0");
}

TEST_CASE("report.html has a row per finding and node, and no markup from the run", "[report_html]") {
  const Report r = three_nodes();
  const std::string html = render_html(r, {});
  CHECK(count(html, "<tr class=\"finding\"") == 2);
  CHECK(count(html, "<tr class=\"node ") == 3);
  CHECK(count(html, "<div class=\"round ") == 1);
  CHECK(count(html, "<tr class=\"check\"") == 1);
  // The hostile host name appears only escaped: as the node's row, its finding and its rank.
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("<b>") == std::string::npos);
  CHECK(count(html, "&lt;img src=x onerror=alert(1)&gt;&quot;node") >= 2);
  CHECK(html.find("data-code=\"node.slow\"") != std::string::npos);
  // The hostile node carries the error finding: it is bad; the link's ends are not.
  CHECK(html.find("status-bad\" data-host=\"&lt;img") != std::string::npos);
  CHECK(count(html, "class=\"node status-ok\"") == 2);
  CHECK(html.find("no pair figures in this run") != std::string::npos);
  CHECK(html.find("http") == std::string::npos);  // self-contained: nothing to fetch
}

TEST_CASE("a group of two on two hosts is a heatmap pair at its slower member's figure", "[report_html]") {
  const Report r = three_nodes();
  FigureCollector c(r);
  c.add(busbw(0, "n0", 5.0, 1024));
  c.add(busbw(0, "n0", 9.0, 4096));  // the largest size counts
  c.add(busbw(1, "n1", 7.0, 4096));
  Result link;
  link.test = "net.pair_bw";
  link.rank = 2;
  link.host = hostile;
  link.entity = {"link", "n0<->n2/eth0"};
  link.metric = "bw";
  link.unit = "GB/s";
  link.value = 1.5;
  c.add(link);
  const auto f = c.take();
  REQUIRE(f.pairs.size() == 2);
  CHECK(f.pairs[0].a == "n0");
  CHECK(f.pairs[0].b == "n1");
  CHECK(f.pairs[0].value == Approx(7.0));
  CHECK(f.pairs[1].a == "n0");
  CHECK(f.pairs[1].b == "n2");
  // No GPU figure: one bar per rank that measured mpi.alltoall, at its largest size.
  REQUIRE(f.bars.size() == 2);
  CHECK(f.bars[0].value == Approx(9.0));
  const std::string html = render_html(r, f);
  // Two grids (one per test), each pair drawn on both sides of the diagonal.
  CHECK(count(html, "<table class=\"heatmap\"") == 2);
  CHECK(count(html, "<td class=\"cell\"") == 4);
  CHECK(html.find("data-a=\"n0\" data-b=\"n1\" data-value=\"7\"") != std::string::npos);
}

TEST_CASE("per-GPU bars take gpu.burn's figure, failed checks included", "[report_html]") {
  const Report r = three_nodes();
  FigureCollector c(r);
  for (int g = 0; g < 2; ++g) {
    Result res;
    res.test = "gpu.burn";
    res.rank = 0;
    res.host = "n0";
    res.entity = {"gpu", "n0/gpu" + std::to_string(g)};
    res.metric = "tflops";
    res.unit = "TFLOP/s";
    res.value = g ? 400 : 680;
    res.status = g ? Status::Fail : Status::Pass;
    c.add(res);
  }
  const auto f = c.take();
  REQUIRE(f.bars.size() == 2);
  const std::string html = render_html(r, f);
  CHECK(count(html, "class=\"bar bar-low\"") == 1);
  CHECK(count(html, "class=\"bar bar-ok\"") == 1);
}
