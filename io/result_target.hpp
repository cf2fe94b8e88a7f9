// Inside io/: where a result file may be written, and how it takes its final name.
#pragma once

#include <string>

namespace gpurelay {

// Rank 0 only: the final name may be taken only with `overwrite`; the folder must take new names,
// and the names the output is written under beside its final one must fit the file system.
void check_final_path(const std::string& path, bool overwrite);

// Rank 0 only, after every rank closed the file: gives the finished file its final name.
void publish_partial(const std::string& partial_path, const std::string& path, bool overwrite);

}  // namespace gpurelay
