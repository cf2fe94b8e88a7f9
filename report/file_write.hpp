// Inside report/: writing whole texts to files that a full disk may refuse.
#pragma once

#include <string>

namespace gpurelay {

// Writes all of `text` to `fd` (a write may take only part of it); false with errno set if the
// file system refused the rest (a full disk, a quota).
bool write_all(int fd, const std::string& text);

}  // namespace gpurelay
