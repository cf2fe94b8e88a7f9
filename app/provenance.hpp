// What travels with the results: versions, the time, and the result file's root attributes.
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
// The build's commit ("1a2b3c4d5e6f", "-dirty" with changes), or "unknown" outside git.
std::string git_hash();
// The same as version_text() on one line, for the report and the JSON summary.
std::string versions_line();
// Now, as "2026-12-01T09:00:00Z".
std::string utc_timestamp();
// Every resolved key (typed), the deck, the versions, and every rank's host, device and placement.
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
