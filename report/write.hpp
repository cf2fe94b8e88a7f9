// The outputs written to files a full disk may refuse: every byte or a clear error. The CSVs'
// rows are appended under a lock (the tasks of a job array share one file), whole or not at all.
#pragma once

#include <string>
#include <vector>

#include "report/reduce.hpp"

namespace gpurelay {

// Writes `text` to `path` through a temporary file and a rename: readers never see half of it.
void write_file_atomically(const std::string& path, const std::string& text);
// A row per run (the header first when the file is new or empty), and the side tables' rows.
void append_results_csv(const std::string& path, const std::vector<RunSummary>& runs);
// Throws a usage error if `path`, or a side table of it, holds rows under another header.
void check_results_csv_header(const std::string& path);
// The side table beside the results CSV: NAME.ranks.csv (`links` false) or NAME.links.csv.
std::string side_table_path(const std::string& results_csv, bool links);

// --- Inside report/ -----------------------------------------------------------------------------
// A CSV cell of a number ("%.6g"; "" for NaN) and of a text (quoted where it must be).
std::string csv_number(double value);
std::string csv_text(const std::string& text);
// Throws a usage error when the CSV at `path` has another header (none, or empty, is fine).
void check_csv_header(const std::string& path, const std::string& header);
// Appends whole lines under an exclusive lock, `header` first into an empty file; all or none.
void append_csv_rows(const std::string& path, const std::string& header, const std::string& rows);

}  // namespace gpurelay
