// The command line, parsed with CLI11: one string option per deck key, generated from the key
// table, so a new key is a flag (and a line of --help) without touching this file.
#include "config/command_line.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/error.hpp"

namespace gpurelay {
namespace {

constexpr std::size_t kMaxDeckBytes = std::size_t{1} << 20;

std::string read_deck(const std::string& path) {
    const auto fail = [&](int error_number) {
        return usage_error("cannot read input deck '" + path + "': " + std::strerror(error_number));
    };
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                               &std::fclose);
    if (!file) throw fail(errno);
    std::string text;
    std::array<char, 4096> buffer{};
    std::size_t got = 0;
    while ((got = std::fread(buffer.data(), 1, buffer.size(), file.get())) > 0) {
        text.append(buffer.data(), got);
        // A deck is a page of keys; a device or pipe that never ends must not fill the memory.
        if (text.size() > kMaxDeckBytes) {
            throw usage_error("input deck '" + path + "' is larger than " +
                              std::to_string(kMaxDeckBytes >> 20) + " MiB: not a gpurelay deck");
        }
    }
    // fopen succeeds on a directory; the read is what fails (EISDIR).
    if (std::ferror(file.get())) throw fail(errno);
    return text;
}

// The message for the first argument CLI11 did not recognise.
Error unexpected_argument(const std::string& argument) {
    if (argument.size() < 2 || argument[0] != '-') {
        return usage_error("unexpected argument '" + argument +
                           "': gpurelay takes no positional arguments (use --input DECK)");
    }
    const std::string option = argument.substr(0, argument.find('='));
    std::string message = "unknown option " + option;
    if (option.starts_with("--")) {
        std::vector<std::string> flags = {"--input", "--print-config", "--print-sizes", "--version",
                                          "--help"};
        for (const ConfigKey& key : config_keys()) flags.push_back(flag_of(key.name));
        const std::vector<std::string_view> candidates(flags.begin(), flags.end());
        if (const std::string hint = closest_name(option, candidates); !hint.empty()) {
            message += " (did you mean " + hint + "?)";
        }
    }
    return usage_error(message);
}

// Each deck key's option, with its key.
using KeyOptions = std::vector<std::pair<const CLI::Option*, std::string_view>>;

// The options gpurelay takes: its own, and one per deck key (returned).
KeyOptions add_options(CLI::App& app) {
    app.set_help_flag("-h,--help", "print this help and exit");
    app.footer(
        "Every key of the input deck is also a flag: key foo_bar is --foo-bar VALUE, and flags "
        "override the deck. Sizes take k, K, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti (powers "
        "of 1024), e.g. 64Mi, or are whole numbers in exponent form, e.g. 1e9.");
    // Unknown arguments are collected rather than rejected by CLI11, so that the error can say
    // which flag was probably meant.
    app.allow_extras();
    // Every option keeps all its occurrences; a repeat is reported below, by name.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_option("--input")
        ->description("input deck (TOML); flags override its keys")
        ->option_text("DECK");
    app.add_flag("--print-config")->description("print the resolved deck as TOML and exit");
    // The scripts (scripts/sweep) ask it what a spec of sizes means rather than parse it again.
    app.add_option("--print-sizes")
        ->description(
            "print the sizes SPEC expands to, as --elements "
            "reads it, one a line, and exit")
        ->option_text("SPEC");
    app.add_flag("--version")->description("print the version and exit");
    KeyOptions keys;
    const Config defaults;
    for (const ConfigKey& key : config_keys()) {
        const std::string default_text = config_value_text(defaults, key.name);
        CLI::Option* option = app.add_option(flag_of(key.name))->description(std::string(key.help));
        // option_text is what --help shows after the flag: the kind of value and its default.
        option->option_text(std::string(key.value_hint) +
                            (default_text.empty() ? "" : "=" + default_text));
        if (key.is_bool) {
            // CLI11 gives an option whose value is optional its default_str when the value is
            // left out, so a bare --overwrite reads as "true".
            option->expected(0, 1)->default_str("true");
        }
        keys.emplace_back(option, key.name);
    }
    return keys;
}

// CLI11's "--depth: 1 required <type> missing", said in words.
Error argument_mismatch(const CLI::ArgumentMismatch& e) {
    const std::string message = e.what();
    const std::size_t colon = message.find(':');
    if (message.starts_with("--") && colon != std::string::npos && message.ends_with("missing")) {
        return usage_error("option " + message.substr(0, colon) + " needs a value");
    }
    return usage_error(message);
}

// What CLI11 lets through: a flag taken as a key's value, an argument no option took, an option
// given twice.
void check_arguments(const CLI::App& app, const KeyOptions& keys) {
    // CLI11 lets "--depth --steps 5" give --depth the value "--steps", and then finds 5 unused.
    for (const auto& [option, key] : keys) {
        if (option->count() > 0 && !option->results().empty() &&
            option->results().front().starts_with("--")) {
            throw usage_error("option " + option->get_name() + " needs a value (got the flag " +
                              option->results().front() + ")");
        }
    }
    if (const std::vector<std::string> extras = app.remaining(); !extras.empty()) {
        throw unexpected_argument(extras.front());
    }
    for (const CLI::Option* option : app.parse_order()) {
        if (option->count() > 1) {
            throw usage_error("option " + option->get_name() + " given more than once");
        }
    }
}

}  // namespace

CommandLine parse_command_line(int argc, const char* const* argv) {
    CommandLine result;
    CLI::App app(
        "gpurelay: a GPU relay mini-app that times a ring of tensor exchanges between "
        "MPI ranks, overlapped with compute, and checks every result.",
        "gpurelay");
    const KeyOptions keys = add_options(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        result.show_help = true;
        result.help_text = app.help();
        return result;
    } catch (const CLI::ArgumentMismatch& e) {
        throw argument_mismatch(e);
    } catch (const CLI::ParseError& e) {
        throw usage_error(e.what());
    }
    if (app.count("--version") > 0) {
        result.show_version = true;
        return result;
    }
    if (app.count("--print-sizes") > 0) {
        result.sizes_to_print =
            parse_size_list("--print-sizes", app.get_option("--print-sizes")->results().front());
        return result;
    }
    check_arguments(app, keys);
    result.print_config = app.count("--print-config") > 0;
    // steps = 0 until the deck or a flag sets it: its default depends on duration (below).
    result.config.steps = 0;
    // The deck first, whatever the position of --input: flags override it.
    if (app.count("--input") > 0) {
        result.deck_path = app.get_option("--input")->results().front();
        if (result.deck_path.empty()) throw usage_error("--input needs a file name");
        result.config =
            config_from_toml(read_deck(result.deck_path), result.deck_path, result.config);
    }
    // Flags in the order typed, so that the first bad one is the one reported.
    for (const CLI::Option* option : app.parse_order()) {
        const auto key_option = std::find_if(
            keys.begin(), keys.end(), [&](const auto& entry) { return entry.first == option; });
        if (key_option == keys.end()) continue;
        set_config_value(result.config, key_option->second, option->results().front(),
                         option->get_name());
    }
    // A run with a duration and no steps of its own runs until its duration alone.
    if (result.config.steps == 0) {
        result.config.steps = result.config.duration_s > 0 ? kNoStepLimit : Config{}.steps;
    }
    return result;
}

}  // namespace gpurelay
