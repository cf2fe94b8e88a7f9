// Inside io/: a layout's datasets, named once for making and reopening the file, its checks, and
// the rule for the output's names.
#pragma once

#include <hdf5.h>

#include <string>
#include <string_view>
#include <vector>

#include "io/h5.hpp"
#include "io/result_file.hpp"

namespace gpurelay {

inline constexpr std::string_view complete_attribute = "complete";

// "a/b" and "/a/b" name the same matrix.
std::string matrix_key(std::string_view path);
// The absolute name of a matrix's dataset: "/timings/overlap_on/a".
std::string matrix_name(const MatrixSpec& spec);

// Checks that need no communication, so a bad layout fails on every rank at the same point.
void validate_layout(const ResultFileLayout& layout);
// Attribute names must be non-empty and not "complete" (the file's own).
void validate_attributes(const Attributes& attributes);

struct DeclaredDataset {
    std::string name;  // absolute ("/timings/step_s")
    ElementType type;
    std::vector<hsize_t> dims;
};

// The layout's /y sets: its row_sets, or the root's alone.
std::vector<RowSet> row_sets(const ResultFileLayout& layout);

// Each set's y and step (when the layout has written steps), then the matrices as declared.
std::vector<DeclaredDataset> declared_datasets(const ResultFileLayout& layout);

// A usage error naming the dataset when it is missing or its type or shape differs.
H5Dataset open_declared_dataset(hid_t file, const std::string& file_path,
                                const DeclaredDataset& declared);

// Rank 0 only: the whole file made serially under a temporary name, then renamed over PATH.partial:
// so no collective call can fail on one rank while the others wait in it (a full disk, a quota, a
// killed rank), and a .partial is readable from the moment it exists.
void make_partial(const std::string& partial_path, const ResultFileLayout& layout,
                  const Attributes& attributes);

// Rank 0, before any rank opens it: PATH.partial is unfinished, with every dataset of `layout`.
void check_resumable(const std::string& partial_path, const ResultFileLayout& layout);

// Rank 0 only: check_target()'s rule for PATH itself and its working names.
void check_final_path(const std::string& path, bool overwrite);

// Rank 0 only, after every rank closed the file.
void publish_partial(const std::string& partial_path, const std::string& path, bool overwrite);

}  // namespace gpurelay
