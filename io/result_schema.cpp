#include "io/result_schema.hpp"

namespace gpurelay {

std::string ResultSchema::pass_group(bool overlap) {
    return overlap ? "overlap_on" : "overlap_off";
}

std::string ResultSchema::timings_path(bool overlap, std::string_view phase) {
    return "/timings/" + pass_group(overlap) + "/" + std::string(phase);
}

std::string ResultSchema::x_mismatches_path(bool overlap) {
    return "/verification/" + pass_group(overlap) + "/x_mismatches";
}

std::string ResultSchema::c_mismatches_path(bool overlap) {
    return "/verification/" + pass_group(overlap) + "/c_mismatches";
}

ResultFileLayout ResultSchema::layout() const {
    ResultFileLayout layout;
    layout.pairs = shape_.pairs;
    layout.written_steps = shape_.written_steps;
    layout.elements = shape_.elements;
    layout.y_type = shape_.y_type;
    for (const bool overlap : shape_.passes) {
        for (const std::string& phase : shape_.phases) {
            layout.matrices.push_back({timings_path(overlap, phase), ElementType::float64,
                                       shape_.ranks, shape_.steps, "ms"});
        }
        for (const std::string& path : {x_mismatches_path(overlap), c_mismatches_path(overlap)}) {
            layout.matrices.push_back({path, ElementType::uint64, shape_.pairs, shape_.steps});
        }
    }
    return layout;
}

}  // namespace gpurelay
