#include "io/resume.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <variant>

#include "io/result_file.hpp"
#include "runtime/error.hpp"

namespace gpurelay {

namespace {

// The root attributes of a .partial, read one by one (rank 0, before any rank opens the file);
// each refusal says how to start afresh instead, as a fresh run would take it.
class PartialAttributes {
  public:
    explicit PartialAttributes(const Config& config)
        : config_(config), partial_(config.output + ".partial") {}
    const std::string& path() const { return partial_; }

    Error damaged(const std::string& what) const {
        return usage_error("damaged .partial '" + partial_ + "': " + what + ": " +
                           ResultFile::fresh_start_advice(config_.output));
    }
    std::optional<AttributeValue> read(const char* name) const {
        try {
            return ResultFile::read_root_attribute(partial_, name);
        } catch (const Error& e) {
            throw damaged(e.what());
        }
    }
    std::optional<std::int64_t> integer(const char* name) const {
        const auto value = read(name);
        if (!value) return std::nullopt;
        if (!std::holds_alternative<std::int64_t>(*value)) {
            throw damaged(std::string("attribute ") + name + " is not an integer");
        }
        return std::get<std::int64_t>(*value);
    }

  private:
    const Config& config_;
    std::string partial_;
};

// The keys that shape /y and the verification must be the stored deck's.
void check_same_deck(const Config& config, const PartialAttributes& file) {
    const auto stored = file.read("config_toml");
    if (!stored || !std::holds_alternative<std::string>(*stored)) {
        throw file.damaged(
            "attribute config_toml (the deck it was started with) is "
            "missing or not text");
    }
    Config before;
    try {
        before = config_from_toml(std::get<std::string>(*stored), "its config_toml");
        validate_config(before);
    } catch (const Error& e) {
        throw file.damaged(e.what());
    }
    for (const char* key :
         {"elements", "dtype", "steps", "warmup", "overlap", "c_elements", "c_iterations", "alpha",
          "seed", "pairing", "write", "pattern", "group_size"}) {
        if (config_value_toml(before, key) != config_value_toml(config, key)) {
            throw usage_error("resume: " + std::string(key) + " is " +
                              config_value_toml(config, key) + " but '" + file.path() +
                              "' was started with " + config_value_toml(before, key));
        }
    }
}

// Where a stopped run stopped: the size, the pass and the step, each inside the run.
ResumePoint stop_point(const Config& config, const PartialAttributes& file) {
    const auto step = file.integer("stopped_at_step");
    const auto pass = file.integer("stopped_pass");
    if (!step || !pass) {
        // Its ranks were killed, or ended by an mpirun that exited (Open MPI's mpirun exits at
        // once on a second SIGINT or SIGTERM, and kills the ranks a second after its first).
        throw usage_error("resume: '" + file.path() +
                          "' was not stopped cleanly (no stopped_at_step: its ranks were killed "
                          "mid-run; under mpirun, SIGUSR1 to mpirun stops a run so it can "
                          "resume): " +
                          ResultFile::fresh_start_advice(config.output));
    }
    // Files of one size, and of versions before several sizes, have neither: 0.
    const std::int64_t size = file.integer("stopped_size").value_or(0);
    const std::int64_t sizes_failed = file.integer("sizes_failed").value_or(0);
    const auto sizes = static_cast<std::int64_t>(config.size_list().size());
    if (size < 0 || size >= sizes || sizes_failed < 0 || sizes_failed > size) {
        throw file.damaged("stopped_size " + std::to_string(size) + " is outside 0.." +
                           std::to_string(sizes - 1) + ", or sizes_failed " +
                           std::to_string(sizes_failed) + " is more than the sizes before it");
    }
    const std::int64_t passes = config.overlap == OverlapMode::compare ? 2 : 1;
    if (*pass < 0 || *pass >= passes) {
        throw file.damaged("stopped_pass " + std::to_string(*pass) + " is outside 0.." +
                           std::to_string(passes - 1));
    }
    // A stop comes after at least one step of the pass and before its last (see on_step).
    if (*step < 1 || *step >= config.steps) {
        throw file.damaged("stopped_at_step " + std::to_string(*step) + " is outside 1.." +
                           std::to_string(config.steps - 1));
    }
    return {*pass, *step, 0, 0, size, sizes_failed};
}

}  // namespace

// A run may only continue a file whose results it would reproduce: the keys that shape /y and
// the verification must match the deck stored in the file, and what the file says about where it
// stopped must lie inside the run. Anything unreadable, missing or out of range is a usage error
// "damaged .partial", before any rank opens the file.
ResumePoint find_resume_point(const Config& config) {
    const PartialAttributes file(config);
    std::error_code missing;
    if (!std::filesystem::exists(std::filesystem::symlink_status(file.path(), missing))) {
        throw usage_error("resume: nothing to resume: '" + file.path() + "' does not exist");
    }
    const auto complete = file.integer("complete");
    if (!complete || (*complete != 0 && *complete != 1)) {
        throw file.damaged("attribute complete is missing or not 0 or 1");
    }
    check_same_deck(config, file);
    if (*complete == 0) return stop_point(config, file);
    // A boolean since the file describes itself; 0 or 1 in files of earlier versions.
    const auto verified = file.read("verified");
    const bool* flag = verified ? std::get_if<bool>(&*verified) : nullptr;
    const std::int64_t* number = verified ? std::get_if<std::int64_t>(&*verified) : nullptr;
    if (!flag && !(number && (*number == 0 || *number == 1))) {
        throw file.damaged("it is complete but attribute verified is missing or not a boolean");
    }
    return {0, 0, 1, flag ? std::int64_t{*flag} : *number};
}

}  // namespace gpurelay
