#include "io/resume.hpp"

#include <errno.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "io/output_path.hpp"
#include "io/result_file.hpp"
#include "runtime/error.hpp"

namespace gpurelay {

namespace {

// The newest default outputs' .partial files that --resume without an output reads: each is an
// open of the file, so a folder of many stopped runs costs at most these.
constexpr std::size_t kMostPartialsLookedAt = 16;

// The root attributes of a .partial, read one by one (rank 0, before any rank opens the file);
// each refusal says how to start afresh instead, as a fresh run would take it.
struct PartialAttributes {
    explicit PartialAttributes(const std::string& of) : output(of), path(of + ".partial") {}
    std::string output, path;

    Error damaged(const std::string& what) const {
        return usage_error("damaged .partial '" + path + "': " + what + ": " +
                           ResultFile::fresh_start_advice(output));
    }
    std::optional<AttributeValue> read(const char* name) const {
        try {
            return ResultFile::read_root_attribute(path, name);
        } catch (const Error& e) {
            throw damaged(e.what());
        }
    }
    template <typename T>
    std::optional<T> typed(const char* name, const char* kind) const {
        const auto value = read(name);
        if (!value) return std::nullopt;
        if (!std::holds_alternative<T>(*value)) {
            throw damaged(std::string("attribute ") + name + " is not " + kind);
        }
        return std::get<T>(*value);
    }
    std::optional<std::int64_t> integer(const char* name) const {
        return typed<std::int64_t>(name, "an integer");
    }
    std::optional<std::string> text(const char* name) const {
        return typed<std::string>(name, "text");
    }
};

// The deck the file was started with (its config_toml), for its own output.
Config stored_deck(const PartialAttributes& file) {
    const auto stored = file.text("config_toml");
    if (!stored)
        throw file.damaged("attribute config_toml (the deck it was started with) is missing");
    Config before;
    try {
        before = config_from_toml(*stored, "its config_toml");
        validate_config(before);
    } catch (const Error& e) {
        throw file.damaged(e.what());
    }
    before.output = file.output;
    return before;
}

// Each key that may not differ on resume and does, with both values: "depth 3 (this run: 2)".
std::string differences(const Config& stored, const Config& run) {
    std::string text;
    for (const ConfigKey& key : config_keys()) {
        if (key.may_differ_on_resume) continue;
        const std::string was = config_value_toml(stored, key.name);
        const std::string now = config_value_toml(run, key.name);
        if (was == now) continue;
        if (!text.empty()) text += ", ";
        text += std::string(key.name) + " " + was + " (this run: " + now + ")";
    }
    return text;
}

// Where a stopped run stopped: the size, the pass and the step, each inside the run.
ResumePoint stop_point(const Config& config, const PartialAttributes& file) {
    const auto step = file.integer("stopped_at_step");
    const auto pass = file.integer("stopped_pass");
    if (!step || !pass) {
        // Its ranks were killed, or ended by an mpirun that exited (Open MPI's mpirun exits at
        // once on a second SIGINT or SIGTERM, and kills the ranks a second after its first).
        throw usage_error("resume: '" + file.path +
                          "' was not stopped cleanly (no stopped_at_step: its ranks were killed "
                          "mid-run; under mpirun, SIGUSR1 to mpirun stops a run so it can "
                          "resume): " +
                          ResultFile::fresh_start_advice(file.output));
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
    return {.pass = *pass, .step = *step, .size = size, .sizes_failed = sizes_failed};
}

// How far a .partial's run got, as the stop line says it.
std::string steps_done(const Config& stored, const PartialAttributes& file) {
    if (file.integer("complete").value_or(0) == 1) return "complete (ended before its rename)";
    const auto step = file.integer("stopped_at_step");
    if (!step) return "not stopped cleanly (its ranks were killed: it cannot be resumed)";
    std::string where;
    if (stored.overlap == OverlapMode::compare) {
        where = "pass " + std::to_string(file.integer("stopped_pass").value_or(0) + 1) + " of 2";
    }
    if (stored.several_sizes()) {
        (where += where.empty() ? "" : ", ") +=
            "size " + std::to_string(file.integer("stopped_size").value_or(0) + 1) + " of " +
            std::to_string(stored.sizes.size());
    }
    std::string text =
        "stopped after step " + std::to_string(*step) + " of " + std::to_string(stored.steps);
    if (!where.empty()) text += " (" + where + ")";
    return text;
}

// A default output's .partial as --resume without an output sees it: locked (none when a running
// job holds it), whether its deck is this run's, and what a refusal says of it.
struct Candidate {
    std::string output;
    std::optional<OutputLock> lock;
    bool matches = false;
    std::string about;
};

Candidate look_at(const std::string& output, const Config& config) {
    Candidate candidate{output, OutputLock::try_acquire(output), false, "in use by a running job"};
    if (!candidate.lock) return candidate;
    const PartialAttributes file(output);
    try {
        const Config stored = stored_deck(file);
        const std::string differ = differences(stored, config);
        // One that cannot be resumed is no match, however its deck reads.
        const bool resumable = file.integer("complete").value_or(0) == 1 ||
                               file.integer("stopped_at_step").has_value();
        candidate.matches = differ.empty() && resumable;
        candidate.about = "tag " + config_value_toml(stored, "tag") + ", started " +
                          file.text("started_utc").value_or("(not recorded)") + ", " +
                          steps_done(stored, file) +
                          (differ.empty() ? "" : "; differs: " + differ) +
                          (resumable ? "; continued by: " + resume_command(stored) : "");
    } catch (const Error& e) {
        candidate.about = e.what();
    }
    return candidate;
}

// Whether a default output's name carries this Slurm job's id (a requeued job keeps its id).
bool of_this_job(const std::string& output) {
    const std::string job = slurm_job_suffix();
    return !job.empty() && (output.find(job + ".h5") != std::string::npos ||
                            output.find(job + "-") != std::string::npos);
}

// Quoted for a POSIX shell where it needs to be.
std::string shell_quoted(std::string_view text) {
    constexpr std::string_view kPlain =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/:=+@%";
    if (!text.empty() && text.find_first_not_of(kPlain) == std::string_view::npos) {
        return std::string(text);
    }
    std::string quoted = "'";
    for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

}  // namespace

// A run may only continue a file whose results it would reproduce (resume.hpp).
ResumePoint find_resume_point(const Config& config) {
    const PartialAttributes file(config.output);
    std::error_code missing;
    if (!std::filesystem::exists(std::filesystem::symlink_status(file.path, missing))) {
        throw usage_error("resume: nothing to resume: '" + file.path + "' does not exist");
    }
    const auto complete = file.integer("complete");
    if (!complete || (*complete != 0 && *complete != 1)) {
        throw file.damaged("attribute complete is missing or not 0 or 1");
    }
    // Every key that can change a result must be the stored deck's.
    const Config before = stored_deck(file);
    if (const std::string differ = differences(before, config); !differ.empty()) {
        throw usage_error("resume: '" + file.path + "' was started with " + differ +
                          "; the command that continues it: " + resume_command(before));
    }
    ResumePoint point;
    if (*complete == 0) {
        point = stop_point(config, file);
    } else {
        // A boolean since the file describes itself; 0 or 1 in files of earlier versions.
        const auto verified = file.read("verified");
        const bool* flag = verified ? std::get_if<bool>(&*verified) : nullptr;
        const std::int64_t* number = verified ? std::get_if<std::int64_t>(&*verified) : nullptr;
        if (!flag && !(number && (*number == 0 || *number == 1))) {
            throw file.damaged("it is complete but attribute verified is missing or not a boolean");
        }
        point.complete = 1;
        point.verified = flag ? std::int64_t{*flag} : *number;
    }
    // The launches the file records (a JSON array), "[]" where it records none.
    point.launches = file.text("launches").value_or("[]");
    if (point.launches.size() < 2 || point.launches.front() != '[' ||
        point.launches.back() != ']') {
        throw file.damaged("attribute launches is not a JSON array");
    }
    return point;
}

OutputLock choose_partial_to_resume(Config& config) {
    const std::vector<std::string> outputs = default_partials();
    if (outputs.empty()) {
        throw usage_error(
            "resume: nothing to resume: no outputs/gpurelay-*.h5.partial here (a run that named "
            "its output continues with the same --output)");
    }
    std::vector<Candidate> candidates;
    for (std::size_t i = 0; i < std::min(outputs.size(), kMostPartialsLookedAt); ++i) {
        candidates.push_back(look_at(outputs[i], config));
    }
    // Newest first: the first match, unless a later one is this job's own.
    Candidate* chosen = nullptr;
    for (Candidate& candidate : candidates) {
        if (!candidate.matches) continue;
        if (chosen == nullptr || (of_this_job(candidate.output) && !of_this_job(chosen->output))) {
            chosen = &candidate;
        }
    }
    if (chosen != nullptr) {
        config.output = chosen->output;
        return std::move(*chosen->lock);
    }
    std::string message =
        "resume: no outputs/gpurelay-*.h5.partial was started with this run's deck; of the " +
        std::to_string(candidates.size()) + " newest:";
    for (const Candidate& candidate : candidates) {
        message += "\n  " + candidate.output + ".partial: " + candidate.about;
    }
    if (outputs.size() > candidates.size()) {
        message += "\n  (" + std::to_string(outputs.size() - candidates.size()) +
                   " older, not read: name one with --output PATH --resume)";
    }
    throw usage_error(message);
}

std::string resume_command(const Config& config) {
    std::string command = shell_quoted(program_invocation_name);
    const Config defaults;
    for (const ConfigKey& key : config_keys()) {
        if (key.name == "output" || key.name == "resume" || key.name == "overwrite") continue;
        const std::string value = config_value_text(config, key.name);
        if (value == config_value_text(defaults, key.name)) continue;
        // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on " " + temp.
        (command += ' ') += flag_of(key.name);
        if (!key.is_bool || value != "true") (command += ' ') += shell_quoted(value);
    }
    (command += " --output ") += shell_quoted(config.output);
    return command + " --resume";
}

}  // namespace gpurelay
