// Checks kiln-worker does not run: their records come from outside (`kiln ingest`, a user's own
// job under jobs/kiln-user-job.sh, docs/user-job.md). They are declared in the catalog like any
// check (figures, `kiln catalog`), but kiln run refuses them in --tests and the worker does not
// register them.
#pragma once

#include <string_view>

namespace kiln {

// True for a check whose records only `kiln ingest` writes (model.user_job).
bool ingested_check(std::string_view key);

}  // namespace kiln
