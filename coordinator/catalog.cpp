#include "coordinator/catalog.hpp"

namespace kiln::coord {

const std::vector<CatalogEntry>& catalog() {
  static const std::vector<CatalogEntry> entries{
      {"rank.missing", Severity::Error, "a worker rank never connected to the coordinator",
       "check the node is up and can reach the coordinator's address (firewall, routing), then look at "
       "workers.log in the run directory for the rank's start-up error"},
      {"rank.lost", Severity::Error, "a worker rank stopped talking to the coordinator mid-campaign",
       "check the node (dmesg, power, network link); drain it if it is down and rerun the campaign"},
      {"node.lost", Severity::Critical, "a node dropped out of the campaign (its ranks were lost or timed out)",
       "drain the node, check its power, BMC and network link, and rerun kiln on it once repaired"},
      {"test.fail", Severity::Error, "a test measured a value outside its limits",
       "read the evidence; rerun the test on the entity alone to confirm, then repair or drain it"},
      {"test.error", Severity::Error, "a test could not complete because of an error",
       "read the error in the evidence; fix the software/driver setup on that node and rerun"},
      {"test.timeout", Severity::Error, "a test did not finish before its deadline",
       "the entity may be hung or very slow: check dmesg and the worker log, then rerun the test alone"},
      {"node.slow", Severity::Error, "a node is slow with known-good partners",
       "drain the node; check its NIC (link speed, errors), CPU frequency and thermal state, then rerun"},
      {"link.slow", Severity::Error, "the link between two nodes is slow while both ends are fine with others",
       "check the cable and switch ports between the two nodes (reseat or replace the cable), then rerun a "
       "pair test on them"},
      {"switch.slow", Severity::Error, "every node under one switch is slow",
       "check the switch (uplinks, errors, firmware) before draining its nodes"},
      {"campaign.error", Severity::Critical, "the campaign could not run to the end",
       "read the error; fix the cause (launcher, network, permissions) and rerun"},
  };
  return entries;
}

CatalogEntry lookup(const std::string& code) {
  for (const auto& e : catalog())
    if (e.code == code) return e;
  return {code, Severity::Error, "finding " + code, "see docs/findings.md"};
}

Finding make_finding(const std::string& code, const Entity& entity, const std::string& summary,
                     nlohmann::json evidence, double confidence) {
  const auto e = lookup(code);
  Finding f;
  f.code = code;
  f.severity = e.severity;
  f.entity = entity;
  f.summary = summary;
  f.next_step = e.next_step;
  f.confidence = confidence;
  f.evidence = std::move(evidence);
  return f;
}

}  // namespace kiln::coord
