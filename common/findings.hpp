// The findings catalog: the one place where a finding code is defined, with its severity, the kind
// of entity it names, a one-line meaning and the next step an operator should take. Checks emit
// codes from it (as typed `Code` values, strings only on the wire), the coordinator and the
// localization planner build findings from it, `kiln catalog` prints it and docs/findings.md is
// generated from it (`kiln catalog --markdown`; a unit test fails when the two differ).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/types.hpp"

namespace kiln {

enum class Code {
  RankMissing,
  RankLost,
  NodeLost,
  TestFail,
  TestError,
  TestTimeout,
  GroupBehind,
  NodeSlow,
  NodeRegressed,
  LinkSlow,
  NvlinkSlow,
  SwitchSlow,
  LocalizeUnresolved,
  GpuCount,
  GpuModel,
  GpuDriver,
  GpuLost,
  GpuSdc,
  GpuSlow,
  GpuThrottle,
  GpuMemory,
  GpuMemoryBw,
  GpuEccUncorrectable,
  GpuEccDisabled,
  GpuRowRemapFailure,
  GpuResetRequired,
  GpuPcieDegraded,
  GpuPcieSlow,
  GpuNvlinkDown,
  GpuPowerLimit,
  GpuPersistence,
  GpuMigMode,
  GpuXid,
  GpuHang,
  GpuCuda,
  GpuNvml,
  HcaCount,
  HcaRate,
  FleetOutlier,
  FleetSetting,
  NotTested,
  SpecBelow,
  SoftwareVersion,
  ResultInvalid,
  CampaignError,
};

struct CatalogEntry {
  Code code;
  std::string_view name;         // the code on the wire and in reports: "gpu.sdc"
  Severity severity;
  std::string_view entity_kind;  // node | rank | gpu | hca | link | nvlink | switch | job
  std::string_view meaning;      // one line: what the finding says
  // What to do. "{entity}" is replaced by the entity's id when the finding is made.
  std::string_view next_step;
};

const std::vector<CatalogEntry>& catalog();
const CatalogEntry& entry(Code c);
std::string to_string(Code c);
// The code named `name`, or nullopt when the catalog has no such code.
std::optional<Code> code_from_string(std::string_view name);
void to_json(nlohmann::json& j, Code c);
// Unknown names decode to Code::ResultInvalid: a peer's bad value becomes a finding, not a crash.
void from_json(const nlohmann::json& j, Code& c);

// A finding for `code` about `entity`, with the catalog's severity and next step.
Finding make_finding(Code code, const Entity& entity, const std::string& summary,
                     nlohmann::json evidence = nlohmann::json::array(), double confidence = 1.0);

// docs/findings.md, generated from the catalog.
std::string catalog_markdown();

}  // namespace kiln
