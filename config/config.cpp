// Config's members: the tensor's size and which steps are kept in /y.
#include "config/config.hpp"

#include <algorithm>

namespace gpurelay {

std::uint64_t PipelineKeys::tensor_bytes() const { return elements * dtype_size(dtype); }

std::vector<std::uint64_t> Config::size_list() const {
    return sizes.empty() ? std::vector<std::uint64_t>{elements} : sizes;
}

Config Config::sized(std::uint64_t size_elements) const {
    Config one = *this;
    one.elements = size_elements;
    one.sizes.clear();
    return one;
}

Config Config::largest() const {
    const std::vector<std::uint64_t> all = size_list();
    return sized(*std::max_element(all.begin(), all.end()));
}

bool PipelineKeys::writes_step(std::int64_t step) const {
    if (step < 0 || step >= steps) return false;
    return write == WriteMode::all || (write == WriteMode::last && step == steps - 1) ||
           (write == WriteMode::every && write_every > 0 && (step + 1) % write_every == 0);
}

std::int64_t PipelineKeys::written_rows() const {
    if (write == WriteMode::every) return write_every > 0 ? steps / write_every : 0;
    return write == WriteMode::all ? steps : write == WriteMode::last ? 1 : 0;
}

PipelineKeys::Recorded PipelineKeys::recorded() const {
    StepRecord mode = step_record;
    std::int64_t count = step_record_count;
    if (mode == StepRecord::auto_select) {
        mode = steps <= kAutoRecordSteps ? StepRecord::all : StepRecord::last;
        count = mode == StepRecord::last ? kAutoRecordSteps : 0;
    }
    const std::int64_t columns = mode == StepRecord::all ? steps
                                 : mode == StepRecord::every
                                     ? steps / std::max<std::int64_t>(1, count)
                                 : mode == StepRecord::last ? std::min(count, steps)
                                                            : 0;
    return {mode, count, columns};
}

std::vector<std::int64_t> PipelineKeys::written_steps() const {
    // Row by row: with every:K a loop over the steps would hold up the start of a large run.
    std::vector<std::int64_t> written(static_cast<std::size_t>(written_rows()));
    for (std::size_t row = 0; row < written.size(); ++row) {
        const auto r = static_cast<std::int64_t>(row);
        written[row] = write == WriteMode::all    ? r
                       : write == WriteMode::last ? steps - 1
                                                  : (r + 1) * write_every - 1;
    }
    return written;
}

}  // namespace gpurelay
