#include "io/resume.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <variant>

#include "io/result_file.hpp"
#include "runtime/error.hpp"

namespace gpurelay {

// A run may only continue a file whose results it would reproduce: the keys that shape /y and
// the verification must match the deck stored in the file, and what the file says about where it
// stopped must lie inside the run. Anything unreadable, missing or out of range is a usage error
// "damaged .partial", before any rank opens the file.
ResumePoint find_resume_point(const Config& config) {
    const std::string partial = config.output + ".partial";
    std::error_code missing;
    if (!std::filesystem::exists(std::filesystem::symlink_status(partial, missing))) {
        throw usage_error("resume: nothing to resume: '" + partial + "' does not exist");
    }
    // Each refusal says how to start afresh instead, as a fresh run would take it.
    const auto damaged = [&](const std::string& what) {
        return usage_error("damaged .partial '" + partial + "': " + what + ": " +
                           ResultFile::fresh_start_advice(config.output));
    };
    const auto read = [&](const char* name) -> std::optional<AttributeValue> {
        try {
            return ResultFile::read_root_attribute(partial, name);
        } catch (const Error& e) {
            throw damaged(e.what());
        }
    };
    const auto integer = [&](const char* name) -> std::optional<std::int64_t> {
        const auto value = read(name);
        if (!value) return std::nullopt;
        if (!std::holds_alternative<std::int64_t>(*value)) {
            throw damaged(std::string("attribute ") + name + " is not an integer");
        }
        return std::get<std::int64_t>(*value);
    };
    const auto complete = integer("complete");
    if (!complete || (*complete != 0 && *complete != 1)) {
        throw damaged("attribute complete is missing or not 0 or 1");
    }
    const auto stored = read("config_toml");
    if (!stored || !std::holds_alternative<std::string>(*stored)) {
        throw damaged(
            "attribute config_toml (the deck it was started with) is "
            "missing or not text");
    }
    Config before;
    try {
        before = config_from_toml(std::get<std::string>(*stored), "its config_toml");
        validate_config(before);
    } catch (const Error& e) {
        throw damaged(e.what());
    }
    for (const char* key :
         {"elements", "dtype", "steps", "warmup", "overlap", "c_elements", "c_iterations", "alpha",
          "seed", "pairing", "write", "pattern", "group_size"}) {
        if (config_value_toml(before, key) != config_value_toml(config, key)) {
            throw usage_error("resume: " + std::string(key) + " is " +
                              config_value_toml(config, key) + " but '" + partial +
                              "' was started with " + config_value_toml(before, key));
        }
    }
    if (*complete == 1) {
        // A boolean since the file describes itself; 0 or 1 in files of earlier versions.
        const auto verified = read("verified");
        const bool* flag = verified ? std::get_if<bool>(&*verified) : nullptr;
        const std::int64_t* number = verified ? std::get_if<std::int64_t>(&*verified) : nullptr;
        if (!flag && !(number && (*number == 0 || *number == 1))) {
            throw damaged("it is complete but attribute verified is missing or not a boolean");
        }
        return {0, 0, 1, flag ? std::int64_t{*flag} : *number};
    }
    const auto step = integer("stopped_at_step");
    const auto pass = integer("stopped_pass");
    if (!step || !pass) {
        // Its ranks were killed, or ended by an mpirun that exited (Open MPI's mpirun exits at
        // once on a second SIGINT or SIGTERM, and kills the ranks a second after its first).
        throw usage_error("resume: '" + partial +
                          "' was not stopped cleanly (no stopped_at_step: its ranks were killed "
                          "mid-run; under mpirun, SIGUSR1 to mpirun stops a run so it can "
                          "resume): " +
                          ResultFile::fresh_start_advice(config.output));
    }
    // Files of one size, and of versions before several sizes, have neither: 0.
    const std::int64_t size = integer("stopped_size").value_or(0);
    const std::int64_t sizes_failed = integer("sizes_failed").value_or(0);
    const auto sizes = static_cast<std::int64_t>(config.size_list().size());
    if (size < 0 || size >= sizes || sizes_failed < 0 || sizes_failed > size) {
        throw damaged("stopped_size " + std::to_string(size) + " is outside 0.." +
                      std::to_string(sizes - 1) + ", or sizes_failed " +
                      std::to_string(sizes_failed) + " is more than the sizes before it");
    }
    const std::int64_t passes = config.overlap == OverlapMode::compare ? 2 : 1;
    if (*pass < 0 || *pass >= passes) {
        throw damaged("stopped_pass " + std::to_string(*pass) + " is outside 0.." +
                      std::to_string(passes - 1));
    }
    // A stop comes after at least one step of the pass and before its last (see on_step).
    if (*step < 1 || *step >= config.steps) {
        throw damaged("stopped_at_step " + std::to_string(*step) + " is outside 1.." +
                      std::to_string(config.steps - 1));
    }
    return {*pass, *step, 0, 0, size, sizes_failed};
}

}  // namespace gpurelay
