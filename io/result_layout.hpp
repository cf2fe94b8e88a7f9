// Inside io/: a ResultFileLayout's datasets, named once for creating the file and for opening
// it again, and the checks a layout and its attributes pass before any file work.
#pragma once

#include <hdf5.h>

#include <string>
#include <string_view>
#include <vector>

#include "io/h5_handle.hpp"
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

// One dataset that a layout declares: where it lies, what it holds and its exact shape.
struct DeclaredDataset {
    std::string name;  // absolute ("/timings/step_s")
    ElementType type;
    std::vector<hsize_t> dims;
};

// The layout's /y sets: its row_sets, or the root's alone.
std::vector<RowSet> row_sets(const ResultFileLayout& layout);

// Each set's y and step (when the layout has written steps), then the matrices in declaration
// order.
std::vector<DeclaredDataset> declared_datasets(const ResultFileLayout& layout);

// Opens the declared dataset in `file` (named `file_path` in messages); a usage error naming the
// dataset when it is missing or its type or shape differs from the declaration.
H5Dataset open_declared_dataset(hid_t file, const std::string& file_path,
                                const DeclaredDataset& declared);

}  // namespace gpurelay
