// gpu.dcgm's pure part: reading `dcgmi diag -j`. Two layouts are read (tests/data/dcgm/README.md
// says where they are documented):
//   DCGM 1.x-3.x: {"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name",
//     "results": [{"gpu_ids": "0" or "0,1,...", "status", "warnings": [...], "info": [...]}]}]}],
//     "version"}}
//   DCGM 4.x: the root is "DCGM Diagnostic"; a result names its entity ("entity_group": "GPU",
//     "entity_id": 0) and a test may carry "test_summary": {"status"}; "metadata" holds the version.
// Warnings are strings or objects {"warning": text, "error_id": n}. Malformed input throws.
#pragma once

#include <string>
#include <vector>

namespace kiln::worker::gpu {

enum class DcgmOutcome { Pass, Fail, Warn, Skip };

// One test's result for one GPU (or, for a DCGM software test reported once for all GPUs, for the
// list in `gpus`).
struct DcgmEntry {
  std::string category;  // Deployment, Hardware, Integration, Stress, ...
  std::string test;      // e.g. "Memory", "software"
  std::vector<int> gpus;  // empty: the test is about the node (no entity given)
  DcgmOutcome outcome = DcgmOutcome::Pass;
  std::string raw_status;  // as DCGM wrote it
  std::vector<std::string> warnings;
  std::vector<std::string> info;
};

struct DcgmReport {
  std::string version;
  std::string runtime_error;  // DCGM could not run the diagnostic at all
  std::vector<DcgmEntry> entries;
};

// Throws std::runtime_error with a reason ("dcgmi diag output: ...") on anything it cannot read.
DcgmReport parse_dcgm_diag(const std::string& text);

}  // namespace kiln::worker::gpu
