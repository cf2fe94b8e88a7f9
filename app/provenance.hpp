// What travels with the results: the versions of everything the run used, the time, and the
// root attributes of the result file (the resolved deck, versions, hosts and devices).
#pragma once

#include <string>
#include <vector>

#include "app/passes.hpp"
#include "app/setup.hpp"
#include "io/result_file.hpp"
#include "report/reduce.hpp"
#include "runtime/placement.hpp"

namespace gpurelay {

// --version: a line each for gpurelay (and its git hash), CUDA, NCCL, MPI, HDF5, and where the
// binary, its decks and batch templates are installed (or that it is not).
std::string version_text();
// The source tree's commit when this binary was built ("1a2b3c4d5e6f", with "-dirty" when
// tracked files had changes), or "unknown" when the tree was not a git repository of its own.
std::string git_hash();
// The same as version_text() on one line, for the report and the JSON summary.
std::string versions_line();
// Now, as "2026-12-01T09:00:00Z".
std::string utc_timestamp();
// The result file's root attributes: every resolved key (typed), the deck, the versions, the
// backend and transport, and every rank's host, device and placement.
Attributes root_attributes(const Setup& setup, const std::vector<std::string>& hosts,
                           const std::vector<std::string>& gpus,
                           const std::vector<Placement>& placements);

// Rank 0: the file's `launches` attribute, a JSON array: resume.launches and this launch (its
// start, end, git hash, where it started and ended, and how: "complete", or the signal).
std::string launches_json(const ResumePoint& resume, const Stop& end);

// A size's verdict (`verified`) and headline figures, for its group or, of one size, the root.
Attributes verdict_attributes(const RunSummary& summary, bool verified);

// Collective: each pass's summary as attributes of /timings/PASS (names end in their unit) and
// /verification/PASS (the counts and the verdict) under `group`, rank 0's figures on every rank.
GroupAttributes pass_attributes(MPI_Comm comm, const RunSummary& summary,
                                const std::string& group = "");

}  // namespace gpurelay
