// Unit tests of the typed Config: key parsing, TOML in and out, the command line and validation.
#include "config/config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "config/command_line.hpp"
#include "config/transport_choice.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

// Runs `action`, which must throw a usage error, and returns its message.
std::string usage_message(const std::function<void()>& action) {
    try {
        action();
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ExitCode::usage) << e.what();
        const std::string message = e.what();
        EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
        return message;
    }
    ADD_FAILURE() << "expected a usage error";
    return {};
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

CommandLine parse(std::vector<std::string> args) {
    args.insert(args.begin(), "gpurelay");
    std::vector<const char*> argv;
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

// A deck file in a fresh temporary directory, removed with the fixture.
class DeckFile {
  public:
    explicit DeckFile(const std::string& text) {
        const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = std::filesystem::temp_directory_path() /
               ("gpurelay_config_test_" + std::string(test->name()) + "_" +
                std::to_string(::getpid()));
        std::filesystem::create_directories(dir_);
        path_ = (dir_ / "deck.toml").string();
        std::ofstream(path_) << text;
    }
    ~DeckFile() {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }
    const std::string& path() const { return path_; }

  private:
    std::filesystem::path dir_;
    std::string path_;
};

// A config in which every key differs from its default, including awkward strings and doubles.
Config everything_changed() {
    Config c;
    const std::vector<std::pair<std::string, std::string>> values = {
        {"device", "cpu"},
        {"transport", "mpi"},
        {"elements", "4Ki,64Ki"},  // several sizes: a TOML string
        {"dtype", "float64"},
        {"steps", "11"},
        {"warmup", "3"},
        {"duration", "90m"},
        {"depth", "5"},
        {"overlap", "off"},
        {"blocking", "true"},
        {"calibrate", "false"},
        {"graphs", "true"},
        {"graph_steps", "10"},  // a multiple of depth
        {"launch", "device"},
        {"device_blocks", "7"},
        {"timing", "sampled:3"},
        {"c_elements", "0"},
        {"c_iterations", "7"},
        {"alpha", "0.1"},
        {"seed", "4294967295"},
        {"pairing", "split"},
        {"pattern", "allreduce"},
        {"group_size", "4"},
        {"chunk", "18446744073709551615"},  // above INT64_MAX: written as a string
        {"staging", "on"},
        {"ipc_engine", "sm"},
        {"output", "out dir/\"quoted\" \\back\\ \ttab\nline \x01 \x7f \xc3\xa9.h5"},
        {"overwrite", "true"},
        {"resume", "true"},
        {"write", "every:4"},
        {"step_record", "last:7"},
        {"flush_every", "9"},
        {"summary_json", "s.json"},
        {"results_csv", "r.csv"},
        {"host_wait", "prompt"},
        {"timeout_s", "0.3333333333333333"},
        {"quiet", "true"},
        {"debug_skip_reuse_wait", "true"},
        {"debug_delay_us", "250"},
        {"debug_delay_rank", "3"},
        {"debug_stop_flush", "4"},
        {"debug_stop_close", "true"},
        {"debug_stop_rank", "0"},
        {"tag", "run #1 = 'a' [b]"},
        {"profile_steps", "3:10"},
        {"repeat", "4"},
    };
    for (const auto& [key, value] : values) set_config_value(c, key, value);
    return c;
}

// --- Defaults and the key table ------------------------------------------------------------------

TEST(Config, Defaults) {
    const Config c;
    EXPECT_EQ(c.device, DeviceKind::auto_select);
    EXPECT_EQ(c.transport, "auto");
    EXPECT_EQ(c.elements, 1u << 20);
    EXPECT_EQ(c.dtype, DType::float32);
    EXPECT_EQ(c.steps, 20);
    EXPECT_EQ(c.warmup, 2);
    EXPECT_EQ(c.depth, 2);
    EXPECT_EQ(c.overlap, OverlapMode::compare);
    EXPECT_FALSE(c.blocking);
    EXPECT_FALSE(c.graphs);
    EXPECT_EQ(c.graph_steps, 1);
    EXPECT_EQ(c.timing, Timing::auto_select);
    EXPECT_EQ(c.c_elements, 1u << 20);
    EXPECT_EQ(c.c_iterations, 8);
    EXPECT_EQ(c.alpha, 2.0);
    EXPECT_EQ(c.seed, 12345u);
    EXPECT_EQ(c.pairing, Pairing::adjacent);
    EXPECT_EQ(c.chunk, 4u << 20);
    EXPECT_TRUE(c.output.empty()) << "a new file per run";
    EXPECT_FALSE(c.overwrite);
    EXPECT_EQ(c.write, WriteMode::last);
    EXPECT_EQ(c.flush_every, 0);
    EXPECT_TRUE(c.summary_json.empty());
    EXPECT_TRUE(c.results_csv.empty());
    EXPECT_EQ(c.timeout_s, 300.0);
    EXPECT_FALSE(c.quiet);
    EXPECT_FALSE(c.debug_skip_reuse_wait);
    EXPECT_TRUE(c.tag.empty());
    EXPECT_FALSE(c.profiles());
    EXPECT_EQ(config_value_text(c, "profile_steps"), "");
    EXPECT_EQ(c.tensor_bytes(), 4u << 20);
    EXPECT_EQ(c.timed_steps(), 18);
    EXPECT_NO_THROW(validate_config(c));
}

TEST(Config, KeyTable) {
    const std::vector<std::string> expected = {"device",
                                               "transport",
                                               "elements",
                                               "dtype",
                                               "steps",
                                               "warmup",
                                               "duration",
                                               "depth",
                                               "overlap",
                                               "blocking",
                                               "calibrate",
                                               "graphs",
                                               "graph_steps",
                                               "launch",
                                               "device_blocks",
                                               "timing",
                                               "c_elements",
                                               "c_iterations",
                                               "alpha",
                                               "seed",
                                               "pairing",
                                               "pattern",
                                               "group_size",
                                               "chunk",
                                               "staging",
                                               "ipc_engine",
                                               "output",
                                               "overwrite",
                                               "resume",
                                               "write",
                                               "step_record",
                                               "flush_every",
                                               "summary_json",
                                               "results_csv",
                                               "host_wait",
                                               "timeout_s",
                                               "quiet",
                                               "debug_skip_reuse_wait",
                                               "debug_delay_us",
                                               "debug_delay_rank",
                                               "debug_stop_flush",
                                               "debug_stop_close",
                                               "debug_stop_rank",
                                               "tag",
                                               "profile_steps",
                                               "repeat"};
    std::vector<std::string> names;
    for (const ConfigKey& key : config_keys()) {
        names.emplace_back(key.name);
        EXPECT_FALSE(key.help.empty()) << key.name;
        EXPECT_FALSE(key.value_hint.empty()) << key.name;
    }
    EXPECT_EQ(names, expected);
}

// Only what cannot change a result may differ on --resume: where the outputs go, how long to wait,
// what is printed and profiled. A key that says nothing (a new one) must match.
TEST(Config, KeysThatMayDifferOnResume) {
    std::vector<std::string_view> free;
    for (const ConfigKey& key : config_keys()) {
        if (key.may_differ_on_resume) free.push_back(key.name);
    }
    const std::vector<std::string_view> expected = {"duration",  "output",       "overwrite",
                                                    "resume",    "summary_json", "results_csv",
                                                    "timeout_s", "quiet",        "profile_steps"};
    EXPECT_EQ(free, expected);
}

// --- Sizes ---------------------------------------------------------------------------------------

TEST(ParseSize, Suffixes) {
    EXPECT_EQ(parse_size("elements", "0"), 0u);
    EXPECT_EQ(parse_size("elements", "4096"), 4096u);
    EXPECT_EQ(parse_size("elements", "64Mi"), 67108864u);
    EXPECT_EQ(parse_size("elements", "1G"), 1000000000u);
    EXPECT_EQ(parse_size("elements", "4Ki"), 4096u);
    EXPECT_EQ(parse_size("elements", "3k"), 3000u);
    EXPECT_EQ(parse_size("elements", "3K"), 3000u);
    EXPECT_EQ(parse_size("elements", "2M"), 2000000u);
    EXPECT_EQ(parse_size("elements", "2Gi"), 2ull << 30);
    EXPECT_EQ(parse_size("elements", "5T"), 5000000000000u);
    EXPECT_EQ(parse_size("elements", "5Ti"), 5ull << 40);
    EXPECT_EQ(parse_size("elements", "18446744073709551615"), 18446744073709551615ull);
    EXPECT_EQ(parse_size("elements", "16777215Ti"), 16777215ull << 40);
}

TEST(ParseSize, ExponentFormWhenWhole) {
    EXPECT_EQ(parse_size("elements", "1e9"), 1000000000u);
    EXPECT_EQ(parse_size("elements", "1E6"), 1000000u);
    EXPECT_EQ(parse_size("elements", "1e+09"), 1000000000u);  // TOML's 1e9, as it is printed
    EXPECT_EQ(parse_size("elements", "2.5e3"), 2500u);
    EXPECT_EQ(parse_size("elements", "2500e-2"), 25u);
    EXPECT_EQ(parse_size("elements", "0e0"), 0u);
    Config c;
    set_config_value(c, "chunk", "4e6");
    EXPECT_EQ(c.chunk, 4000000u);
    EXPECT_EQ(parse({"--elements", "1e9"}).config.elements, 1000000000u);
    EXPECT_EQ(parse_size("elements", "1.8446744073709551615e19"), 18446744073709551615ull);
    for (const char* fraction : {"2.5e0", "1e-1", "1.0000000000000001e0", "2501e-2"}) {
        EXPECT_EQ(usage_message([&] { parse_size("chunk", fraction); }),
                  std::string("chunk: '") + fraction + "' is not a whole number");
    }
    for (const char* bad : {"e9", "1e", "1e9Ki", "-1e3", "1.e", "1e3.0", "0x1e3", "1ee3"}) {
        const std::string message = usage_message([&] { parse_size("chunk", bad); });
        EXPECT_TRUE(contains(message, "chunk: expected a size")) << bad << ": " << message;
    }
    for (const char* huge : {"1e20", "1.8446744073709551616e19", "1e9999"}) {
        const std::string message = usage_message([&] { parse_size("chunk", huge); });
        EXPECT_TRUE(contains(message, "too large")) << huge << ": " << message;
    }
}

TEST(ParseSize, Rejects) {
    for (const char* bad :
         {"1.5Mi", "-4", "12Q", "", "Mi", "4 Ki", "4ki", "+4", " 4", "4Mi ", "0x10", "4MiB"}) {
        const std::string message = usage_message([&] { parse_size("chunk", bad); });
        EXPECT_TRUE(contains(message, "chunk: expected a size")) << bad << ": " << message;
    }
    for (const char* huge : {"99999999999Ti", "18446744073709551616", "16777216Ti"}) {
        const std::string message = usage_message([&] { parse_size("chunk", huge); });
        EXPECT_TRUE(contains(message, "chunk:") && contains(message, "too large")) << message;
    }
}

TEST(ParseSizeList, ListsAndRanges) {
    using Sizes = std::vector<std::uint64_t>;
    EXPECT_EQ(parse_size_list("elements", "4Ki"), Sizes{4096});
    EXPECT_EQ(parse_size_list("elements", "4Ki,64Ki,1Mi"), (Sizes{4096, 65536, 1048576}));
    EXPECT_EQ(parse_size_list("elements", "1Mi, 4Ki"), (Sizes{1048576, 4096}));  // as listed
    EXPECT_EQ(parse_size_list("elements", "4Ki:256Mi:x4"),
              (Sizes{4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864, 268435456}));
    EXPECT_EQ(parse_size_list("elements", "1Ki:4Ki:+1Ki"), (Sizes{1024, 2048, 3072, 4096}));
    EXPECT_EQ(parse_size_list("elements", "1000:3500:+1000"), (Sizes{1000, 2000, 3000}));
    EXPECT_EQ(parse_size_list("elements", "4096:5000:x2"), Sizes{4096});
    EXPECT_EQ(parse_size_list("elements", "1:64:+1").size(), kMaxSizes);
}

TEST(ParseSizeList, Rejects) {
    const auto message = [](const char* text) {
        return usage_message([&] { parse_size_list("elements", text); });
    };
    EXPECT_EQ(message(""), "elements: the list of sizes is empty");
    EXPECT_TRUE(contains(message("4Ki,,8Ki"), "an empty size in the list")) << message("4Ki,,8Ki");
    EXPECT_TRUE(contains(message("4Ki,"), "an empty size in the list"));
    for (const char* flat : {"8Ki:4Ki:x2", "4Ki:8Ki:x1", "4Ki:8Ki:+0", "0:8Ki:x2"}) {
        EXPECT_TRUE(contains(message(flat), "does not grow")) << flat << ": " << message(flat);
    }
    for (const char* form : {"4Ki:8Ki", "4Ki:8Ki:*2", "4Ki:8Ki:x", "4Ki:8Ki:2"}) {
        EXPECT_TRUE(contains(message(form), "expected a range FIRST:LAST:xFACTOR")) << form;
    }
    EXPECT_TRUE(contains(message("1:65:+1"), "gives more than 64 sizes")) << message("1:65:+1");
    EXPECT_TRUE(contains(message("1:1Ti:+1Gi"), "gives more than 64 sizes"));
    EXPECT_TRUE(contains(message("4Ki,1Mi,4096"), "the size 4096 is given twice"));
    EXPECT_TRUE(contains(message("4Ki,1Q"), "elements: expected a size")) << message("4Ki,1Q");
}

TEST(SetValue, SeveralSizes) {
    Config c;
    set_config_value(c, "elements", "1Mi,4Ki,64Ki");
    EXPECT_EQ(c.elements, 1048576u);  // the first size's
    EXPECT_EQ(c.sizes, (std::vector<std::uint64_t>{1048576, 4096, 65536}));
    EXPECT_TRUE(c.several_sizes());
    EXPECT_EQ(config_value_text(c, "elements"), "1048576,4096,65536");
    EXPECT_EQ(config_value_toml(c, "elements"), "\"1048576,4096,65536\"");
    EXPECT_EQ(c.largest().elements, 1048576u);
    EXPECT_TRUE(c.largest().sizes.empty());
    EXPECT_EQ(c.sized(4096).elements, 4096u);
    EXPECT_EQ(c.sized(4096).tensor_bytes(), 16384u);
    EXPECT_FALSE(c.sized(4096).several_sizes());
    // One size again: no list left, and a bare TOML integer as before.
    set_config_value(c, "elements", "4Ki");
    EXPECT_TRUE(c.sizes.empty());
    EXPECT_EQ(c.size_list(), std::vector<std::uint64_t>{4096});
    EXPECT_EQ(config_value_toml(c, "elements"), "4096");
    // Every size must suit the kernels, not only the first.
    set_config_value(c, "elements", "4Ki,8Gi");
    EXPECT_EQ(usage_message([&] { validate_config(c); }),
              "elements (8589934592) must be from 1 to 4294967295: kernels index with 32-bit "
              "integers");
    // A deck gives the list as a string.
    const Config deck = config_from_toml("elements = \"4Ki:16Ki:x2\"", "deck.toml");
    EXPECT_EQ(deck.sizes, (std::vector<std::uint64_t>{4096, 8192, 16384}));
}

// --- Values of single keys -----------------------------------------------------------------------

TEST(SetValue, IntegersAndFloats) {
    Config c;
    set_config_value(c, "steps", "7");
    EXPECT_EQ(c.steps, 7);
    EXPECT_EQ(usage_message([&] { set_config_value(c, "steps", "abc"); }),
              "steps: expected a positive integer, got 'abc'");
    EXPECT_EQ(usage_message([&] { set_config_value(c, "steps", "0"); }),
              "steps: expected a positive integer, got '0'");
    for (const char* bad : {"12abc", " 12", "12 ", "1.5", "+3", "", "1e3"}) {
        usage_message([&] { set_config_value(c, "steps", bad); });
    }
    EXPECT_TRUE(contains(usage_message([&] { set_config_value(c, "warmup", "-1"); }),
                         "warmup: expected a non-negative integer"));
    EXPECT_TRUE(contains(
        usage_message([&] { set_config_value(c, "steps", "99999999999999999999"); }), "too large"));
    EXPECT_EQ(c.steps, 7) << "a rejected value must leave the field alone";

    set_config_value(c, "alpha", "-2.5e-3");
    EXPECT_EQ(c.alpha, -2.5e-3);
    for (const char* bad : {"nan", "inf", "-inf", "1e999", "2.0x", "two"}) {
        EXPECT_TRUE(contains(usage_message([&] { set_config_value(c, "alpha", bad); }),
                             "alpha: expected a finite number"))
            << bad;
    }
    EXPECT_TRUE(contains(usage_message([&] { set_config_value(c, "timeout_s", "0"); }),
                         "timeout_s: expected a positive number"));
    set_config_value(c, "seed", "0");
    EXPECT_EQ(c.seed, 0u);
    EXPECT_TRUE(contains(usage_message([&] { set_config_value(c, "seed", "4294967296"); }),
                         "seed: expected an integer from 0 to 4294967295"));
}

TEST(SetValue, ChoicesBooleansAndWrite) {
    Config c;
    EXPECT_EQ(usage_message([&] { set_config_value(c, "overlap", "maybe"); }),
              "overlap: expected one of on|off|compare, got 'maybe'");
    EXPECT_EQ(usage_message([&] { set_config_value(c, "blocking", "yes"); }),
              "blocking: expected true or false, got 'yes'");
    set_config_value(c, "device", "cuda");
    EXPECT_EQ(c.device, DeviceKind::cuda);
    set_config_value(c, "blocking", "true");
    EXPECT_TRUE(c.blocking);

    set_config_value(c, "write", "every:3");
    EXPECT_EQ(c.write, WriteMode::every);
    EXPECT_EQ(c.write_every, 3);
    EXPECT_EQ(config_value_text(c, "write"), "every:3");
    set_config_value(c, "write", "all");
    EXPECT_EQ(c.write, WriteMode::all);
    EXPECT_EQ(c.write_every, 0);
    for (const char* bad : {"every:0", "every:", "every:-2", "every:2x", "every", "some"}) {
        EXPECT_TRUE(contains(usage_message([&] { set_config_value(c, "write", bad); }),
                             "write: expected all, last, none or every:K"))
            << bad;
    }

    set_config_value(c, "timing", "sampled:16");
    EXPECT_EQ(c.timing, Timing::sampled);
    EXPECT_EQ(c.timing_every, 16);
    EXPECT_EQ(config_value_text(c, "timing"), "sampled:16");
    set_config_value(c, "timing", "steps");
    EXPECT_EQ(c.timing, Timing::steps);
    EXPECT_EQ(c.timing_every, 0);
    EXPECT_EQ(config_value_text(c, "timing"), "steps");
    for (const char* bad : {"sampled:0", "sampled", "sampled:", "sampled:x", "every:2", "all"}) {
        EXPECT_TRUE(contains(usage_message([&] { set_config_value(c, "timing", bad); }),
                             "timing: expected auto, phases, sampled:K with K >= 1 or steps"))
            << bad;
    }
    EXPECT_EQ(usage_message([&] { set_config_value(c, "dept", "3"); }),
              "unknown key 'dept' (did you mean 'depth'?)");
}

TEST(ConfigKeys, StepRecordAndItsColumns) {
    Config c;
    set_config_value(c, "step_record", "last:50");
    EXPECT_EQ(c.step_record, StepRecord::last);
    EXPECT_EQ(config_value_text(c, "step_record"), "last:50");
    c.steps = 30;
    EXPECT_EQ(c.recorded().columns, 30);  // no more columns than steps
    set_config_value(c, "step_record", "every:4");
    EXPECT_EQ(c.recorded().columns, 7);  // steps 3, 7, ..., 27
    set_config_value(c, "step_record", "none");
    EXPECT_EQ(c.step_record_count, 0);
    EXPECT_EQ(c.recorded().columns, 0);
    // auto: every step up to 10,000, the last 10,000 beyond.
    set_config_value(c, "step_record", "auto");
    c.steps = 10'000;
    EXPECT_EQ(c.recorded().mode, StepRecord::all);
    c.steps = kNoStepLimit;
    EXPECT_EQ(c.recorded().mode, StepRecord::last);
    EXPECT_EQ(c.recorded().columns, 10'000);
    for (const char* bad : {"last", "last:0", "every:", "all:3", "some", "last:-1", ""}) {
        EXPECT_TRUE(contains(usage_message([&] { set_config_value(c, "step_record", bad); }),
                             "step_record: expected auto, all, none, every:K or last:N"))
            << bad;
    }
}

TEST(ConfigKeys, DurationTakesAUnitAndWritesTheLargestWhole) {
    Config c;
    for (const auto& [text, seconds, back] : {std::tuple{"20s", 20.0, "20s"},
                                              {"10m", 600.0, "10m"},
                                              {"1.5h", 5400.0, "90m"},
                                              {"1d", 86400.0, "1d"},
                                              {"90", 90.0, "90s"},
                                              {"0.25s", 0.25, "0.25s"},
                                              {"", 0.0, ""}}) {
        set_config_value(c, "duration", text);
        EXPECT_EQ(c.duration_s, seconds) << text;
        EXPECT_EQ(config_value_text(c, "duration"), back) << text;
    }
    for (const char* bad : {"-5s", "0", "0s", "abc", "10x", "s", "1e400s", "nan", "400d", "5 s"}) {
        EXPECT_TRUE(contains(usage_message([&] { set_config_value(c, "duration", bad); }),
                             "duration: expected a duration such as 20s"))
            << bad;
    }
}

TEST(ClosestKey, Distances) {
    EXPECT_EQ(closest_key("dept"), "depth");
    EXPECT_EQ(closest_key("ovrelap"), "overlap");
    EXPECT_EQ(closest_key("summary-json"), "summary_json");
    EXPECT_EQ(closest_key("debug_skip_reuse"), "debug_skip_reuse_wait");  // 5 edits, length 16
    EXPECT_EQ(closest_key("zzzzzzz"), "");
    EXPECT_EQ(closest_key("x"), "");
}

// --- TOML ----------------------------------------------------------------------------------------

TEST(Toml, RoundTripDefaults) {
    const Config defaults;
    EXPECT_EQ(config_from_toml(config_to_toml(defaults), "defaults.toml", Config{}), defaults);
}

TEST(Toml, RoundTripEveryKey) {
    const Config c = everything_changed();
    // Guard: a key added later must be changed above too, or this test would not cover it.
    const Config defaults;
    for (const ConfigKey& key : config_keys()) {
        EXPECT_NE(config_value_text(c, key.name), config_value_text(defaults, key.name))
            << key.name << " is not covered by everything_changed()";
    }
    const std::string text = config_to_toml(c);
    const Config back = config_from_toml(text, "resolved.toml");
    EXPECT_EQ(back, c) << text;
    EXPECT_EQ(back.output, c.output);
    EXPECT_EQ(back.alpha, 0.1);
    EXPECT_EQ(back.chunk, 18446744073709551615ull);
    EXPECT_EQ(back.write_every, 4);

    // One key at a time, so a failure names the key.
    for (const ConfigKey& key : config_keys()) {
        const std::string line = std::string(key.name) + " = " + config_value_toml(c, key.name);
        const Config one = config_from_toml(line, "one.toml");
        EXPECT_EQ(config_value_text(one, key.name), config_value_text(c, key.name)) << line;
    }
}

TEST(Toml, RoundTripDoubles) {
    for (const double value : {0.1, 1.0 / 3.0, 1e-300, 5e-324, 1e300, -0.0, 2.0, 123456789.0, 1e22,
                               0.30000000000000004}) {
        Config c;
        c.alpha = value;
        c.timeout_s = std::fabs(value) > 0 ? std::fabs(value) : 1.0;
        const Config back = config_from_toml(config_to_toml(c), "d.toml");
        EXPECT_EQ(back.alpha, value) << config_value_toml(c, "alpha");
        EXPECT_EQ(std::signbit(back.alpha), std::signbit(value));
        EXPECT_EQ(back.timeout_s, c.timeout_s);
    }
}

TEST(Toml, OutputLayout) {
    const std::string text = config_to_toml(Config{});
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text[0], '#');
    std::size_t position = text.find('\n');
    for (const ConfigKey& key : config_keys()) {
        const std::string line = "\n" + std::string(key.name) + " = ";
        const std::size_t found = text.find(line, position);
        ASSERT_NE(found, std::string::npos) << key.name;
        position = found + 1;
    }
    EXPECT_TRUE(contains(text, "\nelements = 1048576\n"));
    EXPECT_TRUE(contains(text, "\ndevice = \"auto\"\n"));
    EXPECT_TRUE(contains(text, "\nalpha = 2.0\n"));
    EXPECT_TRUE(contains(text, "\nwrite = \"last\"\n"));
    EXPECT_TRUE(contains(text, "\nsummary_json = \"\"\n"));
}

TEST(Toml, ValueTypes) {
    const Config c = config_from_toml(
        "elements = \"64Mi\"\nc_elements = 4096\nblocking = true\nalpha = 3\n"
        "steps = \"30\"\ntag = \"x\"\n",
        "deck.toml");
    EXPECT_EQ(c.elements, 67108864u);
    EXPECT_EQ(c.c_elements, 4096u);
    EXPECT_TRUE(c.blocking);
    EXPECT_EQ(c.alpha, 3.0);
    EXPECT_EQ(c.steps, 30);
    EXPECT_EQ(c.tag, "x");

    Config base;
    base.depth = 9;
    EXPECT_EQ(config_from_toml("steps = 4\n", "deck.toml", base).depth, 9) << "base is kept";
}

TEST(Toml, WrongTypes) {
    const auto deck_error = [](const std::string& text) {
        return usage_message([&] { config_from_toml(text, "deck.toml"); });
    };
    EXPECT_EQ(deck_error("steps = \"abc\"\n"),
              "deck.toml: steps: expected a positive integer, got 'abc'");
    EXPECT_TRUE(contains(deck_error("steps = 1.5\n"), "deck.toml: steps: expected a positive"));
    EXPECT_TRUE(contains(deck_error("steps = 2.0\n"), "deck.toml: steps: expected a positive"));
    EXPECT_EQ(config_from_toml("elements = 1e6\n", "deck.toml").elements, 1000000u);
    EXPECT_TRUE(contains(deck_error("elements = 1.5\n"), "deck.toml: elements: expected a size"));
    EXPECT_TRUE(contains(deck_error("elements = -4\n"), "deck.toml: elements: expected a size"));
    EXPECT_EQ(deck_error("blocking = \"yes\"\n"),
              "deck.toml: blocking: expected true or false, got 'yes'");
    EXPECT_TRUE(contains(deck_error("blocking = 1\n"), "blocking: expected true or false"));
    EXPECT_TRUE(contains(deck_error("alpha = nan\n"), "alpha: expected a finite number"));
    EXPECT_TRUE(contains(deck_error("depth = true\n"), "depth: expected a positive integer"));
    EXPECT_EQ(deck_error("[x]\na = 1\n"), "deck.toml: 'x' must be a plain value, not a table");
    EXPECT_EQ(deck_error("depth = [1, 2]\n"),
              "deck.toml: 'depth' must be a plain value, not an array");
    EXPECT_EQ(deck_error("depth = { a = 1 }\n"),
              "deck.toml: 'depth' must be a plain value, not a table");
    EXPECT_TRUE(contains(deck_error("tag = 1979-05-27\n"), "'tag' must be a plain value"));
}

TEST(Toml, UnknownKeyAndParseError) {
    EXPECT_EQ(usage_message([] { config_from_toml("steps = 4\ndept = 3\n", "deck.toml"); }),
              "deck.toml: unknown key 'dept' (did you mean 'depth'?)");
    EXPECT_EQ(usage_message([] { config_from_toml("xyzzy = 3\n", "deck.toml"); }),
              "deck.toml: unknown key 'xyzzy'");
    // The first problem in file order is the one reported, not the first in key order.
    EXPECT_TRUE(contains(
        usage_message([] { config_from_toml("zeta = 1\nalfa = 2\n", "deck.toml"); }), "'zeta'"));

    const std::string parse_error =
        usage_message([] { config_from_toml("steps = 4\nsteps = = 3\n", "deck.toml"); });
    EXPECT_TRUE(parse_error.starts_with("deck.toml:2:")) << parse_error;
    const std::string duplicate =
        usage_message([] { config_from_toml("steps = 4\nsteps = 5\n", "deck.toml"); });
    EXPECT_TRUE(duplicate.starts_with("deck.toml:2:")) << duplicate;
}

// --- Validation ----------------------------------------------------------------------------------

// validate_config's message for the defaults as `change` leaves them.
std::string invalid(const std::function<void(Config&)>& change) {
    Config c;
    change(c);
    return usage_message([&] { validate_config(c); });
}

TEST(Validate, CountsAndNumbers) {
    EXPECT_EQ(invalid([](Config& c) {
                  c.steps = 5;
                  c.warmup = 5;
              }),
              "warmup (5) must be less than steps (5): no step would be timed");
    EXPECT_TRUE(contains(invalid([](Config& c) { c.steps = 0; }), "steps"));
    EXPECT_TRUE(contains(invalid([](Config& c) { c.steps = kNoStepLimit; }), "without duration"));
    EXPECT_TRUE(contains(invalid([](Config& c) { c.warmup = -1; }), "warmup"));
    EXPECT_TRUE(contains(invalid([](Config& c) { c.depth = 0; }), "depth (0)"));
    EXPECT_TRUE(contains(invalid([](Config& c) { c.depth = 65; }), "depth (65)"));
    EXPECT_TRUE(contains(invalid([](Config& c) { c.elements = 0; }), "elements (0)"));
    EXPECT_TRUE(contains(invalid([](Config& c) { c.elements = 1ull << 32; }), "elements"));
    EXPECT_TRUE(contains(invalid([](Config& c) { c.c_elements = 1ull << 32; }), "c_elements"));
    EXPECT_TRUE(contains(invalid([](Config& c) { c.c_iterations = -1; }), "c_iterations"));
    EXPECT_TRUE(contains(invalid([](Config& c) { c.c_iterations = 4294967296LL; }),
                         "c_iterations (4294967296)"));
    EXPECT_TRUE(contains(invalid([](Config& c) { c.alpha = NAN; }), "alpha"));
    EXPECT_TRUE(contains(invalid([](Config& c) { c.chunk = 4095; }), "chunk (4095)"));
    EXPECT_TRUE(contains(invalid([](Config& c) {
                             c.write = WriteMode::every;
                             c.write_every = 0;
                         }),
                         "write"));
    EXPECT_TRUE(contains(invalid([](Config& c) { c.flush_every = -1; }), "flush_every"));
}

// What a run by duration lays out before it starts: /y rows of write = last or none only, and
// without steps no column per step; launch = "device" ends its passes on the device.
TEST(Validate, Duration) {
    const auto by_duration = [](const std::function<void(Config&)>& change) {
        Config c;
        c.duration_s = 20;
        c.steps = kNoStepLimit;
        change(c);
        return c;
    };
    const auto with_duration = [&](const std::function<void(Config&)>& change) {
        return usage_message([&] { validate_config(by_duration(change)); });
    };
    EXPECT_NO_THROW(validate_config(by_duration([](Config&) {})));  // the defaults
    EXPECT_TRUE(contains(with_duration([](Config& c) { c.write = WriteMode::all; }),
                         "duration (20s) needs write = \"last\" or \"none\""));
    EXPECT_TRUE(contains(with_duration([](Config& c) {
                             c.steps = 100;
                             c.write = WriteMode::every;
                             c.write_every = 5;
                         }),
                         "needs write = \"last\" or \"none\""));
    EXPECT_TRUE(contains(with_duration([](Config& c) { c.step_record = StepRecord::all; }),
                         "without steps has no step limit: step_record = \"all\""));
    EXPECT_NO_THROW(validate_config(by_duration([](Config& c) {
        c.steps = 100;
        c.step_record = StepRecord::all;
    })));
    EXPECT_TRUE(contains(with_duration([](Config& c) { c.launch = Launch::device; }),
                         "duration (20s) is for launch = \"host\""));
}

TEST(Validate, Transports) {
    // A writes in place only through the ipc transport; auto is refused too, as it may not
    // pick ipc.
    EXPECT_EQ(invalid([](Config& c) { c.ipc_engine = IpcEngine::sm; }),
              "ipc_engine = \"sm\" needs transport = \"ipc\" (got \"auto\"): A writes into the "
              "consumer's slot only through the ipc transport's mapping");
    Config in_place;
    in_place.ipc_engine = IpcEngine::sm;
    in_place.transport = "ipc";
    EXPECT_NO_THROW(validate_config(in_place));
}

TEST(Validate, Collectives) {
    // Collectives: groups only for them, of consecutive ranks, eager, and not over ipc.
    EXPECT_EQ(invalid([](Config& c) { c.group_size = 2; }),
              "group_size (2) is for pattern = \"broadcast\", \"allreduce\" or \"relay\"; pairs "
              "form no groups");
    EXPECT_TRUE(contains(invalid([](Config& c) {
                             c.pattern = Pattern::broadcast;
                             c.pairing = Pairing::split;
                         }),
                         "pairing = \"split\" is for pattern = \"pairs\""));
    EXPECT_TRUE(contains(invalid([](Config& c) {
                             c.pattern = Pattern::allreduce;
                             c.transport = "ipc";
                         }),
                         "ipc copies into one consumer's slots"));
}

TEST(Validate, Graphs) {
    EXPECT_TRUE(contains(invalid([](Config& c) {
                             c.pattern = Pattern::allreduce;
                             c.graphs = true;
                             c.device = DeviceKind::cuda;
                             c.transport = "nccl";
                         }),
                         "graphs = true is for pattern = \"pairs\""));
    // A relay: over the pair transports (ipc too), graphs where the pair has them, 2 stages at
    // least.
    EXPECT_EQ(invalid([](Config& c) {
                  c.pattern = Pattern::relay;
                  c.group_size = 1;
              }),
              "group_size = 1 makes a relay of 1 rank: a relay needs at least 2 stages");
    for (const char* kind : {"ipc", "mpi", "auto"}) {
        Config relay;
        relay.pattern = Pattern::relay;
        relay.transport = kind;
        EXPECT_NO_THROW(validate_config(relay));
    }
    Config relay_graphs;
    relay_graphs.pattern = Pattern::relay;
    relay_graphs.graphs = true;
    relay_graphs.device = DeviceKind::cuda;
    relay_graphs.transport = "nccl";
    EXPECT_NO_THROW(validate_config(relay_graphs));
    EXPECT_TRUE(contains(invalid([](Config& c) { c.graph_steps = 4; }),
                         "graph_steps (4) needs graphs = true"));
    EXPECT_TRUE(contains(invalid([](Config& c) {
                             c.graphs = true;
                             c.depth = 3;
                             c.graph_steps = 4;
                         }),
                         "graph_steps (4) must be 1 or a multiple of depth (3)"));
    EXPECT_TRUE(contains(invalid([](Config& c) {
                             c.graphs = true;
                             c.graph_steps = 4;
                             c.write = WriteMode::all;
                         }),
                         "graph_steps (4) needs write = \"last\" or \"none\""));
}

// A pass of persistent kernels over ipc with A in place, of one pair, stamped every step.
void device_launch(Config& c) {
    c.launch = Launch::device;
    c.transport = "ipc";
    c.ipc_engine = IpcEngine::sm;
}

TEST(Validate, LaunchDeviceNeedsIpcInPlace) {
    Config ok;
    device_launch(ok);
    ok.device_blocks = 8;
    EXPECT_NO_THROW(validate_config(ok));
    EXPECT_EQ(invalid([](Config& c) { c.launch = Launch::device; }),
              "launch = \"device\" needs transport = \"ipc\" with ipc_engine = \"sm\": the "
              "producer's kernel writes the consumer's slot itself and a word says it has arrived");
    EXPECT_TRUE(contains(invalid([](Config& c) {
                             c.launch = Launch::device;
                             c.transport = "ipc";
                         }),
                         "needs transport = \"ipc\" with ipc_engine = \"sm\""));
    // Another transport named: the table's reason.
    EXPECT_TRUE(contains(invalid([](Config& c) {
                             c.launch = Launch::device;
                             c.transport = "mpi";
                         }),
                         "launch = \"device\" needs transport = \"ipc\" with ipc_engine = "
                         "\"sm\": MPI moves the tensor from the host"));
    EXPECT_TRUE(contains(invalid([](Config& c) {
                             c.launch = Launch::device;
                             c.transport = "nccl";
                             c.device = DeviceKind::cuda;
                         }),
                         "NCCL's own kernels move the tensor"));
}

TEST(Validate, LaunchDeviceRefusesHostOnlyKeys) {
    EXPECT_TRUE(contains(invalid([&](Config& c) {
                             device_launch(c);
                             c.graphs = true;
                             c.device = DeviceKind::cuda;
                         }),
                         "nothing for graphs = true to capture"));
    EXPECT_TRUE(contains(invalid([&](Config& c) {
                             device_launch(c);
                             c.blocking = true;
                         }),
                         "blocking = true is for launch = \"host\""));
    EXPECT_TRUE(contains(invalid([&](Config& c) {
                             device_launch(c);
                             c.pattern = Pattern::relay;
                         }),
                         "pattern = \"relay\" is for launch = \"host\""));
    EXPECT_TRUE(contains(invalid([&](Config& c) {
                             device_launch(c);
                             c.timing = Timing::steps;
                         }),
                         "timing = \"steps\" is for launch = \"host\""));
    EXPECT_EQ(invalid([](Config& c) { c.device_blocks = 4; }),
              "device_blocks (4) needs launch = \"device\": it caps the blocks of its "
              "persistent kernels");
    EXPECT_TRUE(contains(invalid([&](Config& c) {
                             device_launch(c);
                             c.device_blocks = 4097;
                         }),
                         "device_blocks (4097) must be at most 4096"));
}

TEST(Validate, LaunchDeviceDrivesOnePair) {
    Config ok;
    device_launch(ok);
    // One pair: the ranks are known at set-up, where the same table refuses more.
    Config three = ok;
    RunFacts facts;
    facts.world_size = 3;
    EXPECT_TRUE(contains(usage_message([&] { choose_transport(three, facts); }),
                         "launch = \"device\" drives one pair (-np 1 or 2), but this run has 3 "
                         "ranks"));
    facts.world_size = 2;
    EXPECT_NO_THROW(choose_transport(three, facts));
}

TEST(Validate, TimeoutOutputAndProfile) {
    EXPECT_TRUE(contains(invalid([](Config& c) { c.timeout_s = 0; }), "timeout_s"));
    EXPECT_EQ(invalid([](Config& c) { c.output = "out\xff.h5"; }),
              "output is not valid UTF-8 text");
    EXPECT_NO_THROW(validate_config(Config{})) << "no output: a new file per run";
    EXPECT_TRUE(contains(invalid([](Config& c) {
                             c.steps = 6;
                             c.profile_first = 2;
                             c.profile_last = 6;
                         }),
                         "profile_steps (2:6)"));
}

TEST(Validate, GraphsNeedCudaAndNccl) {
    // Graphs need the CUDA path and NCCL; what auto picks is checked where it picks.
    EXPECT_TRUE(contains(invalid([](Config& c) {
                             c.graphs = true;
                             c.device = DeviceKind::cpu;
                         }),
                         "graphs = true needs the CUDA path"));
    EXPECT_TRUE(contains(invalid([](Config& c) {
                             c.graphs = true;
                             c.transport = "mpi";
                         }),
                         "host-side work"));
    Config auto_picks;
    auto_picks.graphs = true;
    EXPECT_NO_THROW(validate_config(auto_picks));
}

TEST(Config, ProfileSteps) {
    Config c;
    set_config_value(c, "profile_steps", "4:9");
    EXPECT_EQ(c.profile_first, 4);
    EXPECT_EQ(c.profile_last, 9);
    EXPECT_EQ(config_value_text(c, "profile_steps"), "4:9");
    EXPECT_NO_THROW(validate_config(c));
    set_config_value(c, "profile_steps", "19:19");  // the last of the default 20 steps
    EXPECT_NO_THROW(validate_config(c));
    set_config_value(c, "profile_steps", "");
    EXPECT_FALSE(c.profiles());
    for (const char* bad : {"4", "4:", ":9", "9:4", "-1:3", "a:b", "1:2:3", " 1:2"}) {
        const std::string message =
            usage_message([&] { set_config_value(c, "profile_steps", bad); });
        EXPECT_TRUE(contains(message, "profile_steps: expected A:B")) << bad << ": " << message;
    }
}

TEST(Validate, Limits) {
    Config c;
    c.steps = 1;
    c.warmup = 0;
    c.depth = 64;
    c.elements = 4294967295u;
    c.c_elements = 0;
    c.c_iterations = 0;
    c.chunk = 4096;
    EXPECT_NO_THROW(validate_config(c));
}

// Each bound at its edge, and the checks that only a Config made in code reaches (the deck's
// parser already refuses sampled:0 and graph_steps = 0).
TEST(Validate, EachBoundAtItsEdge) {
    const auto accepted = [](const std::function<void(Config&)>& change) {
        Config c;
        change(c);
        EXPECT_NO_THROW(validate_config(c));
    };
    accepted([](Config& c) { c.c_iterations = 4294967295LL; });
    accepted([](Config& c) { c.c_elements = 4294967295u; });
    accepted([](Config& c) {
        c.launch = Launch::device;
        c.transport = "ipc";
        c.ipc_engine = IpcEngine::sm;
        c.device_blocks = 4096;
    });
    accepted([](Config& c) { c.timeout_s = 0.001; });
    accepted([](Config& c) { c.timeout_s = 365.0 * 24 * 3600; });
    EXPECT_TRUE(contains(invalid([](Config& c) { c.timeout_s = 1e300; }),
                         "timeout_s (1e+300) must be between"));
    // alpha within float32's normal range, or 0; float64 takes what float32 cannot.
    accepted([](Config& c) { c.alpha = 0; });
    accepted([](Config& c) {
        c.dtype = DType::float64;
        c.alpha = 1e-50;
    });
    EXPECT_TRUE(contains(invalid([](Config& c) { c.alpha = 1e-50; }), "outside float32's range"));
    EXPECT_TRUE(contains(invalid([](Config& c) { c.alpha = 1e39; }), "outside float32's range"));
    EXPECT_EQ(invalid([](Config& c) {
                  c.timing = Timing::sampled;
                  c.timing_every = 0;
              }),
              "timing (sampled:0) needs K of sampled:K >= 1");
    EXPECT_EQ(invalid([](Config& c) { c.graph_steps = 0; }), "graph_steps (0) must be at least 1");
    for (const char* tag : {"a\x7f", "a\tb"}) {
        EXPECT_TRUE(contains(invalid([&](Config& c) { c.tag = tag; }),
                             "tag must not hold control characters"))
            << tag;
    }
}

// The texts travel as TOML, which holds only well-formed UTF-8: every length of sequence up to
// U+10FFFF is taken; overlong forms, surrogates, values past U+10FFFF, a stray or missing
// continuation byte are refused.
TEST(Validate, TextsAreWellFormedUtf8) {
    for (const char* good :
         {"caf\xc3\xa9", "\xe2\x82\xac 5", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"}) {
        Config c;
        c.tag = good;
        EXPECT_NO_THROW(validate_config(c)) << good;
    }
    for (const char* bad : {"\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                            "\xc3\x28", "\xc3\xc3", "\xe2\x82", "\x80", "\xf8\x88\x80\x80\x80"}) {
        EXPECT_EQ(invalid([&](Config& c) { c.tag = bad; }), "tag is not valid UTF-8 text") << bad;
    }
}

// The keys that name a rank, against the world's size, where they act.
TEST(Validate, RankKeysNameRanksOfTheWorld) {
    const auto for_world = [](const Config& c, int world_size) {
        return usage_message([&] { validate_for_world(c, world_size); });
    };
    Config c;
    c.debug_delay_us = 1000;
    c.debug_delay_rank = 3;
    EXPECT_NO_THROW(validate_for_world(c, 4));
    EXPECT_EQ(for_world(c, 3),
              "debug_delay_rank (3) names no rank of this run's 3 (0 to 2): debug_delay_us would "
              "slow no receive");
    c.debug_delay_us = 0;
    EXPECT_NO_THROW(validate_for_world(c, 3)) << "no delay: the rank it names does not act";

    Config stop;  // debug_stop_rank's default, 1, is no rank of one: it acts only when asked
    EXPECT_NO_THROW(validate_for_world(stop, 1));
    stop.debug_stop_flush = 2;
    EXPECT_EQ(for_world(stop, 1),
              "debug_stop_rank (1) names no rank of this run's 1 (0 to 0): debug_stop_flush would "
              "stop no rank");
    stop.debug_stop_flush = 0;
    stop.debug_stop_close = true;
    EXPECT_TRUE(contains(for_world(stop, 1), "debug_stop_close would stop no rank"));
    EXPECT_NO_THROW(validate_for_world(stop, 2));
}

// --- Which steps are written ---------------------------------------------------------------------

TEST(WriteSteps, EachMode) {
    Config c;
    c.steps = 6;
    c.write = WriteMode::all;
    EXPECT_EQ(c.written_steps(), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
    c.write = WriteMode::last;
    EXPECT_EQ(c.written_steps(), (std::vector<std::int64_t>{5}));
    EXPECT_TRUE(c.writes_step(5));
    EXPECT_FALSE(c.writes_step(4));
    c.write = WriteMode::none;
    EXPECT_TRUE(c.written_steps().empty());
    set_config_value(c, "write", "every:2");
    EXPECT_EQ(c.written_steps(), (std::vector<std::int64_t>{1, 3, 5}));
    set_config_value(c, "write", "every:4");
    EXPECT_EQ(c.written_steps(), (std::vector<std::int64_t>{3}));
    set_config_value(c, "write", "every:7");
    EXPECT_TRUE(c.written_steps().empty());
    c.write = WriteMode::all;
    EXPECT_FALSE(c.writes_step(-1));
    EXPECT_FALSE(c.writes_step(6));
}

TEST(Config, TensorBytes) {
    Config c;
    c.elements = 1000;
    EXPECT_EQ(c.tensor_bytes(), 4000u);
    c.dtype = DType::float64;
    EXPECT_EQ(c.tensor_bytes(), 8000u);
}

// --- Command line --------------------------------------------------------------------------------

TEST(CommandLine, NoArguments) {
    const CommandLine cl = parse({});
    EXPECT_EQ(cl.config, Config{});
    EXPECT_FALSE(cl.print_config);
    EXPECT_FALSE(cl.show_help);
    EXPECT_FALSE(cl.show_version);
    EXPECT_TRUE(cl.deck_path.empty());
}

TEST(CommandLine, DeckThenFlagsOverride) {
    const DeckFile deck("steps = 10\ndepth = 4\nelements = \"64Mi\"\noutput = \"deck.h5\"\n");
    // --input after the flags: the deck is still read first.
    const CommandLine cl =
        parse({"--depth", "8", "--c-elements=2Ki", "--print-config", "--input", deck.path()});
    EXPECT_EQ(cl.deck_path, deck.path());
    EXPECT_TRUE(cl.print_config);
    EXPECT_EQ(cl.config.steps, 10);
    EXPECT_EQ(cl.config.depth, 8);
    EXPECT_EQ(cl.config.elements, 67108864u);
    EXPECT_EQ(cl.config.c_elements, 2048u);
    EXPECT_EQ(cl.config.output, "deck.h5");
}

// steps defaults to 20, or with a duration to no limit; steps given stays as given.
TEST(CommandLine, StepsDefaultByDuration) {
    EXPECT_EQ(parse({}).config.steps, 20);
    EXPECT_EQ(parse({"--duration", "1h"}).config.steps, kNoStepLimit);
    EXPECT_EQ(parse({"--duration", "1h", "--steps", "20"}).config.steps, 20);
    const DeckFile deck("steps = 500\n");
    EXPECT_EQ(parse({"--input", deck.path(), "--duration", "1m"}).config.steps, 500);
}

TEST(CommandLine, EveryKeyIsAFlag) {
    const Config target = everything_changed();
    std::vector<std::string> args;
    for (const ConfigKey& key : config_keys()) {
        std::string flag = "--" + std::string(key.name);
        std::replace(flag.begin(), flag.end(), '_', '-');
        args.push_back(flag);
        args.push_back(config_value_text(target, key.name));
    }
    EXPECT_EQ(parse(args).config, target);
}

TEST(CommandLine, BareBooleanFlag) {
    const CommandLine bare = parse({"--overwrite", "--quiet", "--steps", "3"});
    EXPECT_TRUE(bare.config.overwrite);
    EXPECT_TRUE(bare.config.quiet);
    EXPECT_EQ(bare.config.steps, 3);
    const DeckFile deck("overwrite = true\nblocking = true\n");
    const CommandLine off =
        parse({"--input", deck.path(), "--overwrite", "false", "--blocking=false"});
    EXPECT_FALSE(off.config.overwrite);
    EXPECT_FALSE(off.config.blocking);
    EXPECT_EQ(usage_message([] {
                  parse({"--overwrite", "yes"});
              }),
              "--overwrite: expected true or false, got 'yes'");
}

TEST(CommandLine, Errors) {
    EXPECT_EQ(usage_message([] {
                  parse({"--dept", "3"});
              }),
              "unknown option --dept (did you mean --depth?)");
    EXPECT_EQ(usage_message([] { parse({"--c_elements=3"}); }),
              "unknown option --c_elements (did you mean --c-elements?)");
    EXPECT_EQ(usage_message([] {
                  parse({"--inptu", "x.toml"});
              }),
              "unknown option --inptu (did you mean --input?)");
    EXPECT_EQ(usage_message([] { parse({"--frobnicate"}); }), "unknown option --frobnicate");
    EXPECT_EQ(usage_message([] {
                  parse({"--overlap", "maybe"});
              }),
              "--overlap: expected one of on|off|compare, got 'maybe'");
    EXPECT_EQ(usage_message([] {
                  parse({"--c-elements", "1.5Mi"});
              }).substr(0, 33),
              "--c-elements: expected a size (an");
    EXPECT_EQ(usage_message([] {
                  parse({"--depth", "3", "--depth", "4"});
              }),
              "option --depth given more than once");
    EXPECT_TRUE(
        contains(usage_message([] { parse({"deck.toml"}); }), "unexpected argument 'deck.toml'"));
    EXPECT_EQ(usage_message([] { parse({"--steps"}); }), "option --steps needs a value");
    EXPECT_EQ(usage_message([] {
                  parse({"--input", "/nonexistent/x.toml"});
              }),
              "cannot read input deck '/nonexistent/x.toml': No such file or directory");
    const DeckFile deck("dept = 2\n");
    EXPECT_EQ(usage_message([&] {
                  parse({"--input", deck.path()});
              }),
              deck.path() + ": unknown key 'dept' (did you mean 'depth'?)");
    // Values are checked here; cross-key validation is left to the caller.
    EXPECT_NO_THROW(parse({"--steps", "2", "--warmup", "5"}));
}

TEST(CommandLine, HelpAndVersion) {
    const CommandLine help = parse({"--help"});
    EXPECT_TRUE(help.show_help);
    EXPECT_TRUE(contains(help.help_text, "--depth"));
    EXPECT_TRUE(contains(help.help_text, "--debug-skip-reuse-wait"));
    EXPECT_TRUE(contains(help.help_text, "12345")) << "defaults are shown";
    EXPECT_TRUE(parse({"-h"}).show_help);
    EXPECT_TRUE(parse({"--version"}).show_version);
}

// --print-sizes answers with the sizes `elements` would take, and refuses what it refuses.
TEST(CommandLine, PrintSizes) {
    using Sizes = std::vector<std::uint64_t>;
    EXPECT_TRUE(parse({"--depth", "2"}).sizes_to_print.empty());
    EXPECT_EQ(parse({"--print-sizes", "64Ki"}).sizes_to_print, Sizes{65536});
    EXPECT_EQ(parse({"--print-sizes", "4Ki:64Ki:x4"}).sizes_to_print, (Sizes{4096, 16384, 65536}));
    EXPECT_EQ(parse({"--print-sizes", "1e3,2k,1Ki"}).sizes_to_print, (Sizes{1000, 2000, 1024}));
    Config config;
    for (const char* spec : {"1Ki:2Mi:x2", "1Ki:8Ki:+1Ki", "4Ki,1Mi,3"}) {
        set_config_value(config, "elements", spec, "--elements");
        EXPECT_EQ(parse({"--print-sizes", spec}).sizes_to_print, config.size_list()) << spec;
    }
    EXPECT_EQ(usage_message([] {
                  parse({"--print-sizes", "4Kx"});
              }),
              "--print-sizes: expected a size (an integer with an optional suffix k, K, Ki, M, "
              "Mi, G, Gi, T or Ti, or a whole number in exponent form such as 1e9), got '4Kx'");
    EXPECT_EQ(usage_message([] {
                  parse({"--print-sizes", "1Mi,1048576"});
              }),
              "--print-sizes: the size 1048576 is given twice in '1Mi,1048576'");
    EXPECT_EQ(usage_message([] { parse({"--print-sizes"}); }),
              "option --print-sizes needs a value");
}

}  // namespace
}  // namespace gpurelay
