// gpurelay_config_doc: prints docs/CONFIG.md, generated from the key table.
#include <cstdio>
#include <string>

#include "config/config.hpp"

int main() {
    const std::string doc = gpurelay::config_doc_markdown();
    return std::fwrite(doc.data(), 1, doc.size(), stdout) == doc.size() ? 0 : 1;
}
