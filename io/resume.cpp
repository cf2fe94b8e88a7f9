#include "io/resume.hpp"

#include <string>
#include <variant>

#include "io/result_file.hpp"
#include "runtime/error.hpp"

namespace gpurelay {

// A run may only continue a file whose results it would reproduce: the keys that shape /y and
// the verification must match the deck stored in the file.
ResumePoint find_resume_point(const Config& config) {
    const std::string partial = config.output + ".partial";
    const auto stored = ResultFile::read_root_attribute(partial, "config_toml");
    if (!stored || !std::holds_alternative<std::string>(*stored)) {
        throw usage_error("resume: nothing to resume: '" + partial + "' does not exist");
    }
    const Config before = config_from_toml(std::get<std::string>(*stored), partial);
    for (const char* key : {"elements", "dtype", "steps", "warmup", "overlap", "c_elements",
                            "c_iterations", "alpha", "seed", "pairing", "write"}) {
        if (config_value_toml(before, key) != config_value_toml(config, key)) {
            throw usage_error("resume: " + std::string(key) + " is " +
                              config_value_toml(config, key) + " but '" + partial +
                              "' was started with " + config_value_toml(before, key));
        }
    }
    const auto step = ResultFile::read_root_attribute(partial, "stopped_at_step");
    const auto pass = ResultFile::read_root_attribute(partial, "stopped_pass");
    if (!step || !pass || !std::holds_alternative<std::int64_t>(*step) ||
        !std::holds_alternative<std::int64_t>(*pass)) {
        throw usage_error("resume: '" + partial +
                          "' was not stopped by a signal (no stopped_at_step): start afresh");
    }
    return {std::get<std::int64_t>(*pass), std::get<std::int64_t>(*step)};
}

}  // namespace gpurelay
