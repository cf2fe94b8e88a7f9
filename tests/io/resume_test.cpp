// Which .partial --resume continues, and what it refuses: every key that can change a result must
// match the stored deck (each one that differs named with both values), a run without an output
// continues only the default output whose deck is its own, and the command a refusal or a stop
// line prints gives the deck back. Rank 0 alone, on .partial files it makes (the others wait).
#include "io/resume.hpp"

#include <errno.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/command_line.hpp"
#include "io/result_file.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

namespace fs = std::filesystem;

// A fresh folder of this test's own, the working directory while it lives (--resume without an
// output reads ./outputs).
class ResumeTest : public ::testing::Test {
  protected:
    void SetUp() override {
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank != 0) GTEST_SKIP() << "rank 0 reads and writes the files alone";
        char name[] = "/tmp/gpurelay-resume-XXXXXX";
        ASSERT_NE(::mkdtemp(name), nullptr);
        folder_ = name;
        previous_ = fs::current_path();
        fs::current_path(folder_);
        fs::create_directory("outputs");
    }
    void TearDown() override {
        if (!folder_.empty()) {
            fs::current_path(previous_);
            fs::remove_all(folder_);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    // A run of 100 steps on the CPU path: what each test varies.
    static Config deck(std::int64_t depth, const std::string& transport, const std::string& tag) {
        Config config;
        config.device = DeviceKind::cpu;
        config.steps = 100;
        config.depth = depth;
        config.transport = transport;
        config.tag = tag;
        return config;
    }

    // OUTPUT.partial as a run of `config` stopped after step `step` leaves it, written `age` ago.
    static void stopped_run(const std::string& output, Config config, std::int64_t step,
                            std::chrono::seconds age = {}) {
        config.output = output;
        ResultFile file =
            ResultFile::create(MPI_COMM_SELF, output, false, ResultFileLayout{},
                               {{"config_toml", config_to_toml(config)},
                                {"started_utc", std::string("2026-01-02T03:04:05Z")}});
        file.close(false, {{"stopped_at_step", step},
                           {"stopped_pass", std::int64_t{0}},
                           {"launches", std::string("[{\"from_step\": 0}]")}});
        fs::last_write_time(output + ".partial", fs::file_time_type::clock::now() - age);
    }

    // The usage error `action` throws, or "" when it throws none.
    template <typename F>
    static std::string refusal(F action) {
        try {
            action();
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ExitCode::usage) << e.what();
            return e.what();
        }
        return "";
    }

    fs::path folder_, previous_;
};

TEST_F(ResumeTest, ContinuesWhereEveryKeyThatShapesAResultMatchesAndNamesEachThatDiffers) {
    const Config started = deck(2, "mpi", "study");
    stopped_run("out.h5", started, 40);
    // Where the outputs go, how long to wait, what is printed: these may differ.
    Config run = started;
    run.output = "out.h5";
    run.resume = true;
    run.quiet = true;
    run.timeout_s = 9;
    run.summary_json = "summary.json";
    const ResumePoint point = find_resume_point(run);
    EXPECT_EQ(point.step, 40);
    EXPECT_EQ(point.complete, 0);
    EXPECT_EQ(point.launches, "[{\"from_step\": 0}]");

    run.depth = 3;
    run.transport = "ipc";
    const std::string message = refusal([&] { find_resume_point(run); });
    EXPECT_NE(message.find("resume: 'out.h5.partial' was started with transport \"mpi\" (this "
                           "run: \"ipc\"), depth 2 (this run: 3); the command that continues it: "),
              std::string::npos)
        << message;
    EXPECT_TRUE(
        message.ends_with(" --device cpu --transport mpi --steps 100 --tag study --output "
                          "out.h5 --resume"))
        << message;
}

TEST_F(ResumeTest, WithoutAnOutputContinuesOnlyTheMatchThisJobsOwnFirst) {
    const std::string x = "outputs/gpurelay-20260101-000000.h5";
    const std::string y = "outputs/gpurelay-20260101-000001.h5";
    stopped_run(x, deck(2, "mpi", "jobX"), 5, std::chrono::seconds(60));
    stopped_run(y, deck(3, "ipc", "jobY"), 7);  // the newer
    for (const auto& [tag, expected] : {std::pair{"jobX", x}, std::pair{"jobY", y}}) {
        Config run = tag == std::string("jobX") ? deck(2, "mpi", tag) : deck(3, "ipc", tag);
        run.resume = true;
        const OutputLock lock = choose_partial_to_resume(run);
        EXPECT_EQ(run.output, expected) << tag;
        EXPECT_TRUE(lock.held());
    }
    // A requeued Slurm job (its id kept) continues its own, though another matching is newer.
    const std::string own = "outputs/gpurelay-20251231-000000-job77.h5";
    stopped_run(own, deck(2, "mpi", "jobX"), 9, std::chrono::seconds(600));
    ::setenv("SLURM_JOB_ID", "77", 1);
    Config run = deck(2, "mpi", "jobX");
    run.resume = true;
    const OutputLock lock = choose_partial_to_resume(run);
    ::unsetenv("SLURM_JOB_ID");
    EXPECT_EQ(run.output, own);
}

TEST_F(ResumeTest, WithoutAnOutputRefusesListingEachWithWhatDiffersAndItsCommand) {
    const std::string x = "outputs/gpurelay-20260101-000000.h5";
    const std::string y = "outputs/gpurelay-20260101-000001.h5";
    Config run = deck(4, "mpi", "jobX");
    run.resume = true;
    EXPECT_NE(refusal([&] {
                  choose_partial_to_resume(run);
              }).find("resume: nothing to resume: no outputs/gpurelay-*.h5.partial here"),
              std::string::npos);
    stopped_run(x, deck(2, "mpi", "jobX"), 5, std::chrono::seconds(60));
    stopped_run(y, deck(3, "ipc", "jobY"), 7);
    const OutputLock running = OutputLock::acquire(y);  // a job still writing it
    const std::string message = refusal([&] { choose_partial_to_resume(run); });
    const std::string program = program_invocation_name;
    EXPECT_EQ(message,
              "resume: no outputs/gpurelay-*.h5.partial was started with this run's deck; of the "
              "2 newest:\n  " +
                  y + ".partial: in use by a running job\n  " + x +
                  ".partial: tag \"jobX\", started 2026-01-02T03:04:05Z, stopped after step 5 of "
                  "100 (pass 1 of 2); differs: depth 2 (this run: 4); continued by: " +
                  program + " --device cpu --transport mpi --steps 100 --tag jobX --output " + x +
                  " --resume");
    EXPECT_TRUE(run.output.empty());
}

// POSIX shell words: blanks split, single quotes hold anything, a backslash escapes one character.
std::vector<std::string> shell_words(const std::string& line) {
    std::vector<std::string> words;
    std::optional<std::string> word;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (c == ' ') {
            if (word) words.push_back(*word);
            word.reset();
        } else if (c == '\'') {
            const std::size_t end = line.find('\'', i + 1);
            word = word.value_or("") + line.substr(i + 1, end - i - 1);
            i = end;
        } else {
            word = word.value_or("") + (c == '\\' ? line[++i] : c);
        }
    }
    if (word) words.push_back(*word);
    return words;
}

TEST_F(ResumeTest, TheCommandGivesTheDeckBack) {
    Config config = deck(5, "ipc", "it's two words");
    config.sizes = {4096, 65536};
    config.elements = 4096;
    config.calibrate = false;
    config.quiet = true;
    config.write = WriteMode::every;
    config.write_every = 3;
    config.output = "outputs/a run.h5";
    const std::string command = resume_command(config);
    EXPECT_NE(command.find(" --tag 'it'\\''s two words' "), std::string::npos) << command;
    std::vector<std::string> words = shell_words(command);
    ASSERT_FALSE(words.empty());
    EXPECT_EQ(words.front(), program_invocation_name);
    std::vector<const char*> argv;
    for (const std::string& word : words) argv.push_back(word.c_str());
    const CommandLine line = parse_command_line(static_cast<int>(argv.size()), argv.data());
    config.resume = true;
    EXPECT_EQ(line.config, config) << command;
}

}  // namespace
}  // namespace gpurelay
