// Inside report/: writing whole texts to files that a full disk may refuse.
#pragma once

#include <string>

namespace gpurelay {

// Writes all of `text` to `fd` (a write may take only part of it); false with errno set if the
// file system refused the rest (a full disk, a quota).
bool write_all(int fd, const std::string& text);

// The CSV's cell of a number ("%.6g" as {fmt} writes it; "" for NaN, "0" for 0) and of a text
// (quoted where it holds a comma, a quote or a newline).
std::string csv_number(double value);
std::string csv_text(const std::string& text);

// Throws a usage error when the CSV at `path` holds rows under another header than `header`
// (another gpurelay version's columns); a missing or empty file is fine.
void check_csv_header(const std::string& path, const std::string& header);
// Appends `rows` (whole lines) to the CSV at `path` under an exclusive lock, `header` first when
// the file is new or empty, so that the tasks of a job array can share one file; all the rows or
// none. Throws when the file holds another header, or the file system refuses the rows.
void append_csv_rows(const std::string& path, const std::string& header, const std::string& rows);

}  // namespace gpurelay
