#include "io/result_schema.hpp"

#include <utility>

#include "runtime/log_histogram.hpp"

namespace gpurelay {

std::string ResultSchema::case_group(std::size_t i) { return "/cases/" + std::to_string(i); }

std::string ResultSchema::pass_group(bool overlap) {
    return overlap ? "overlap_on" : "overlap_off";
}

std::string ResultSchema::timings_path(std::string_view group, bool overlap,
                                       std::string_view phase) {
    return std::string(group) + "/timings/" + pass_group(overlap) + "/" + std::string(phase);
}

std::string ResultSchema::step_index_path(std::string_view group, bool overlap) {
    return timings_path(group, overlap, "step_index");
}

std::string ResultSchema::histogram_counts_path(std::string_view group, bool overlap) {
    return std::string(group) + "/histograms/" + pass_group(overlap) + "/counts";
}

std::string ResultSchema::histogram_sums_path(std::string_view group, bool overlap) {
    return std::string(group) + "/histograms/" + pass_group(overlap) + "/sums";
}

std::string ResultSchema::x_mismatches_path(std::string_view group, bool overlap) {
    return std::string(group) + "/verification/" + pass_group(overlap) + "/x_mismatches";
}

std::string ResultSchema::c_mismatches_path(std::string_view group, bool overlap) {
    return std::string(group) + "/verification/" + pass_group(overlap) + "/c_mismatches";
}

namespace {

// What each phase's times are: the one-line description of /timings/PASS/NAME.
std::string phase_description(const std::string& phase) {
    static const std::pair<const char*, const char*> kWords[] = {
        {"a", "kernel A's time making the step's tensor x (producers)"},
        {"send", "the time sending x to the consumer (producers)"},
        {"recv",
         "the time receiving x (consumers; not timed on ipc, where the send is the "
         "transfer)"},
        {"c", "kernel C's time, the work that overlaps the transfer (consumers)"},
        {"wait", "the time waiting for x after C (consumers)"},
        {"b", "kernel B's time making y from x, with its check of x (consumers)"},
        {"step", "the period from the previous step's end to this one's (NaN for step 0)"},
    };
    for (const auto& [name, words] : kWords) {
        if (phase == name) {
            return std::string("per rank and kept step (step_index), ") + words +
                   "; NaN where the phase is not the rank's or was not timed";
        }
    }
    return "per rank and kept step, the time of phase " + phase + "; NaN where not timed";
}

std::string pass_words(bool overlap) {
    return overlap ? "the pass with C overlapping the transfer (overlap on)"
                   : "the pass with C after the transfer (overlap off)";
}

}  // namespace

ResultFileLayout ResultSchema::layout() const {
    ResultFileLayout layout;
    layout.pairs = shape_.pairs;
    layout.written_steps = shape_.written_steps;
    layout.elements = shape_.elements;
    layout.y_type = shape_.y_type;
    layout.y_notes = {
        "1",
        "B's output y = alpha * x (x: A's tensor of the step): one row per written step (see "
        "/step) for each pair (or group row) of consumers",
        {"pair", "step", "element"}};
    layout.step_notes = {
        "1", "the step each row of /y holds (0-based; a dimension scale of /y)", {"row"}};
    if (shape_.sizes.empty()) {
        add_size(layout, "");
        return layout;
    }
    for (std::size_t i = 0; i < shape_.sizes.size(); ++i) {
        const std::string group = case_group(i);
        layout.row_sets.push_back({group, shape_.sizes[i]});
        add_size(layout, group);
        layout.group_attributes.push_back(
            {group,
             {{"description", std::string("the results of one tensor size of the run")},
              {"elements", static_cast<std::int64_t>(shape_.sizes[i])}}});
    }
    layout.group_attributes.insert(
        layout.group_attributes.begin(),
        {"/cases",
         {{"description", std::string("one group per tensor size, in the order they ran")}}});
    return layout;
}

void ResultSchema::add_size(ResultFileLayout& layout, const std::string& group) const {
    layout.group_attributes.push_back(
        {group + "/timings",
         {{"description", std::string("phase times per rank and kept step (step_record), one "
                                      "group per pass")}}});
    layout.group_attributes.push_back(
        {group + "/verification",
         {{"description", std::string("wrong elements per pair and kept step (the columns of "
                                      "/timings), one group per pass")}}});
    const std::uint64_t columns = shape_.recorded;
    for (const bool overlap : shape_.passes) {
        for (const std::string& phase : shape_.phases) {
            layout.matrices.push_back({timings_path(group, overlap, phase), ElementType::float64,
                                       shape_.ranks, columns, "ms", phase_description(phase),
                                       "rank", "step"});
        }
        layout.matrices.push_back(
            {step_index_path(group, overlap), ElementType::int64, shape_.ranks, columns, "1",
             "per rank, the step each column of the timings holds (-1: none)", "rank", "step"});
        layout.matrices.push_back(
            {x_mismatches_path(group, overlap), ElementType::uint64, shape_.pairs, columns, "1",
             "elements of the received x that differ from the formula (B's check), per pair "
             "and kept step",
             "pair", "step"});
        layout.matrices.push_back(
            {c_mismatches_path(group, overlap), ElementType::uint64, shape_.pairs, columns, "1",
             "elements of C's output that differ from the formula, per pair and kept step", "pair",
             "step"});
    }
    add_histograms(layout, group);
    // The pass groups exist once their first matrix does.
    for (const bool overlap : shape_.passes) {
        for (const char* top : {"/timings/", "/verification/", "/histograms/"}) {
            layout.group_attributes.push_back(
                {group + top + pass_group(overlap),
                 {{"description", pass_words(overlap)}, {"overlap", overlap}}});
        }
    }
}

// Each pass's histograms, with what a reader needs to turn buckets into times on /histograms.
void ResultSchema::add_histograms(ResultFileLayout& layout, const std::string& group) const {
    std::string phases;
    for (const std::string& phase : shape_.phases) phases += (phases.empty() ? "" : ",") + phase;
    layout.group_attributes.push_back(
        {group + "/histograms",
         {{"description",
           std::string("each pass's phase times over every rank's timed steps (the step's "
                       "period over the ranks whose period is their link's), a row per phase "
                       "(phases): bucket 0 holds times up to lowest_ms, bucket i > 0 those in "
                       "(lowest_ms gamma^(i-1), lowest_ms gamma^i] and stands for 2 lowest_ms "
                       "gamma^i / (gamma + 1), within relative_error of each; the last bucket "
                       "holds what lies above")},
          {"phases", phases},
          {"lowest_ms", LogHistogram::kLowest},
          {"gamma", LogHistogram::kGamma},
          {"relative_error", LogHistogram::kRelativeError},
          {"buckets", static_cast<std::int64_t>(LogHistogram::bucket_count())}}});
    for (const bool overlap : shape_.passes) {
        layout.matrices.push_back({histogram_counts_path(group, overlap), ElementType::uint64,
                                   shape_.phases.size(), LogHistogram::bucket_count(), "1",
                                   "per phase, the timed steps in each bucket", "phase", "bucket"});
        layout.matrices.push_back(
            {histogram_sums_path(group, overlap), ElementType::float64, shape_.phases.size(),
             kHistogramSums, "ms",
             "per phase, the exact sum, sum of squares (ms^2), least and largest of its times",
             "phase", "figure"});
    }
}

}  // namespace gpurelay
