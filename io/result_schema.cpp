#include "io/result_schema.hpp"

#include <utility>

namespace gpurelay {

std::string ResultSchema::case_group(std::size_t i) { return "/cases/" + std::to_string(i); }

std::string ResultSchema::pass_group(bool overlap) {
    return overlap ? "overlap_on" : "overlap_off";
}

std::string ResultSchema::timings_path(std::string_view group, bool overlap,
                                       std::string_view phase) {
    return std::string(group) + "/timings/" + pass_group(overlap) + "/" + std::string(phase);
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
            return std::string("per rank and step, ") + words +
                   "; NaN where the phase is not the rank's or was not timed";
        }
    }
    return "per rank and step, the time of phase " + phase + "; NaN where not timed";
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
         {{"description", std::string("phase times per rank and step, one group per pass")}}});
    layout.group_attributes.push_back(
        {group + "/verification",
         {{"description", std::string("wrong elements per pair and step, one group per pass")}}});
    for (const bool overlap : shape_.passes) {
        for (const std::string& phase : shape_.phases) {
            layout.matrices.push_back({timings_path(group, overlap, phase), ElementType::float64,
                                       shape_.ranks, shape_.steps, "ms", phase_description(phase),
                                       "rank", "step"});
        }
        layout.matrices.push_back(
            {x_mismatches_path(group, overlap), ElementType::uint64, shape_.pairs, shape_.steps,
             "1",
             "elements of the received x that differ from the formula (B's check), per pair "
             "and step",
             "pair", "step"});
        layout.matrices.push_back(
            {c_mismatches_path(group, overlap), ElementType::uint64, shape_.pairs, shape_.steps,
             "1", "elements of C's output that differ from the formula, per pair and step", "pair",
             "step"});
    }
    // The pass groups exist once their first matrix does.
    for (const bool overlap : shape_.passes) {
        for (const char* top : {"/timings/", "/verification/"}) {
            layout.group_attributes.push_back(
                {group + top + pass_group(overlap),
                 {{"description", pass_words(overlap)}, {"overlap", overlap}}});
        }
    }
}

}  // namespace gpurelay
