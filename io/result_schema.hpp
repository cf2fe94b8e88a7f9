// The result file's datasets, named in one place for the layout and every write, so the two
// cannot drift apart.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/result_file.hpp"

namespace gpurelay {

class ResultSchema {
  public:
    struct Shape {
        std::uint64_t pairs = 1;
        std::uint64_t ranks = 1;
        std::uint64_t recorded = 0;  // the columns of /timings and /verification (step_record)
        std::uint64_t elements = 0;
        // Several sizes in run order, each in its own group (case_group); empty: `elements`.
        std::vector<std::uint64_t> sizes;
        ElementType y_type = ElementType::float32;
        std::vector<std::int64_t> written_steps;  // the rows of /y; empty: no /y
        std::vector<bool> passes;                 // each pass's overlap, in run order
        std::vector<std::string> phases;          // the timed phases, as /timings names them
    };
    explicit ResultSchema(Shape shape) : shape_(std::move(shape)) {}

    // /y, /step, then per pass the timings of every phase and the two mismatch counts; for
    // several sizes, all of these in each size's group.
    ResultFileLayout layout() const;

    // "/cases/0". Every path below takes the group it lies in ("" for the root, a run of one size).
    static std::string case_group(std::size_t i);
    // "overlap_on" or "overlap_off".
    static std::string pass_group(bool overlap);
    // Rank r's times of `phase`, one per step, in row r: "/timings/overlap_on/a".
    static std::string timings_path(std::string_view group, bool overlap, std::string_view phase);
    // Rank r's step held in each column of the timings, in row r (-1: none).
    static std::string step_index_path(std::string_view group, bool overlap);
    // A pass's histograms over every rank's timed steps, a row per phase: each bucket's count,
    // and the exact sum, sum of squares, least and largest (kHistogramSums).
    static std::string histogram_counts_path(std::string_view group, bool overlap);
    static std::string histogram_sums_path(std::string_view group, bool overlap);
    static constexpr std::size_t kHistogramSums = 4;
    // Pair p's wrong elements of x (B's fused check), one per kept step, in row p.
    static std::string x_mismatches_path(std::string_view group, bool overlap);
    // ... and of C's output.
    static std::string c_mismatches_path(std::string_view group, bool overlap);

  private:
    void add_size(ResultFileLayout& layout, const std::string& group) const;
    void add_histograms(ResultFileLayout& layout, const std::string& group) const;

    Shape shape_;
};

}  // namespace gpurelay
