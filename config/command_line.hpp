// The command line: an optional input deck, then one flag per deck key on top of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace gpurelay {

struct CommandLine {
    Config config;
    bool print_config = false;  // --print-config: print the resolved deck and exit 0
    bool show_version = false;  // --version
    bool show_help = false;     // --help / -h
    std::string help_text;      // filled when show_help
    std::string deck_path;      // --input, empty when none
    // --print-sizes SPEC: the sizes SPEC expands to (printed, exit 0); empty when not asked.
    std::vector<std::uint64_t> sizes_to_print;
};

// Reads --input DECK, then every key as a flag over it (a bare boolean flag means true); a
// usage_error on anything wrong, with a did-you-mean for an unknown flag. The caller validates.
// With --help, --version or --print-sizes nothing else is read.
CommandLine parse_command_line(int argc, const char* const* argv);

}  // namespace gpurelay
