// The run's HDF5 result file, written with parallel HDF5 (MPI-IO) by every rank of a communicator:
// /y [pairs, rows, elements], /step [rows], 2-D matrices that ranks fill row by row, and root
// attributes (provenance and `complete`). It is written as PATH.partial, renamed to PATH only when
// the run completes. Collective calls (create, reopen, flush, close, the destructor) are made by
// every rank, in the same order, with the same arguments; HDF5 here is not thread-safe.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace gpurelay {

// Element type of a dataset; stored little-endian IEEE / two's complement.
enum class ElementType { float32, float64, uint64, int64 };
// The ElementType of the C++ type T.
template <typename T>
constexpr ElementType element_type() {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, std::uint64_t> || std::is_same_v<T, std::int64_t>);
    if constexpr (std::is_same_v<T, float>) return ElementType::float32;
    if constexpr (std::is_same_v<T, double>) return ElementType::float64;
    if constexpr (std::is_same_v<T, std::uint64_t>) return ElementType::uint64;
    return ElementType::int64;
}

// A 2-D dataset [rows, cols] that ranks fill row by row (timings per rank and step, counts per
// pair and step). `path` may name groups ("timings/step_s"); they are created as needed.
struct MatrixSpec {
    std::string path;
    ElementType type;
    std::uint64_t rows;
    std::uint64_t cols;
    std::string units = {};        // the dataset's "units" attribute (e.g. "ms"); empty: none
    std::string description = {};  // its one-line "description" attribute; empty: none
    std::string row_label = {}, col_label = {};  // its dimension names ("rank", "step")
};

// What a dataset says about itself: its "units" and "description" attributes and the names of
// its dimensions (HDF5 dimension labels, which h5py reads as dataset.dims[i].label).
struct DatasetNotes {
    std::string units, description;
    std::vector<std::string> dims;
};

// Attribute values: a UTF-8 string (variable length), an int64, a float64, a boolean (stored as
// h5py stores one: an 8-bit enum {FALSE = 0, TRUE = 1}, read as numpy.bool_), or a list of
// integers, written as a 1-D int64 array (the root's `elements`; never read back).
using AttributeValue =
    std::variant<std::string, std::int64_t, double, bool, std::vector<std::int64_t>>;
using Attributes = std::vector<std::pair<std::string, AttributeValue>>;
// Attributes of groups inside the file: {"/timings/overlap_on", {...}}.
using GroupAttributes = std::vector<std::pair<std::string, Attributes>>;

// Where a /y and its /step lie, and its rows' length: "" for the root's (/y, /step), or a group
// of a run of several tensor sizes ("/cases/1": /cases/1/y and /cases/1/step).
struct RowSet {
    std::string group;
    std::uint64_t elements = 0;
};

// What datasets the file holds; must be the same on every rank.
struct ResultFileLayout {
    std::uint64_t pairs = 1;
    std::vector<std::int64_t> written_steps;  // /step: the step each row of /y holds; empty: no /y
    std::uint64_t elements = 0;
    // Several /y, one per group, each with the written steps above: a run of several sizes. Empty:
    // one /y at the root, of `elements` values a row.
    std::vector<RowSet> row_sets;
    ElementType y_type = ElementType::float32;
    std::vector<MatrixSpec> matrices;  // created in this order; intermediate groups made as needed
    DatasetNotes y_notes, step_notes;  // what /y and /step say about themselves
    GroupAttributes group_attributes;  // written on groups when the file is made
};

class ResultFile {
  public:
    // Collective over `comm`; the caller holds the output's lock (OutputLock). Rank 0 applies
    // check_target() and makes the whole file serially as PATH.partial.tmp, renamed PATH.partial:
    // /y (contiguous, not filled), /step, every matrix (NaN for floats, 0 for integers), the root
    // `attributes` and `complete` = 0, so a failure there is one error on every rank. Then every
    // rank opens it (MPI-IO).
    static ResultFile create(MPI_Comm comm, const std::string& path, bool overwrite,
                             const ResultFileLayout& layout, const Attributes& attributes);

    // Not collective; rank 0, before any file work: create()'s rule for `path`. Its folder exists
    // and takes new names; it and its working names (.partial, .partial.tmp, .lock) fit the file
    // system; PATH and PATH.partial are nothing or regular files; an existing PATH needs
    // `overwrite`, and so does a PATH.partial that --resume could finish. Usage errors.
    static void check_target(const std::string& path, bool overwrite);

    // How to start afresh over a PATH.partial that --resume cannot continue, as check_target()
    // rules: "run again without --resume ...", or "... with --overwrite" where the file holds a
    // finished or stopped run that a fresh run keeps.
    static std::string fresh_start_advice(const std::string& path);

    // Not collective; rank 0: gives a PATH.partial that is already complete (its run ended between
    // the close and the rename) its final name, under check_target()'s rule.
    static void publish_complete_partial(const std::string& path, bool overwrite);

    // Collective over `comm`: reopens PATH.partial, left by a stopped run, for a resumed run to
    // fill in the remaining rows. Every rank leaves with rank 0's usage error when PATH.partial
    // does not exist, PATH exists without `overwrite`, the .partial is not HDF5 or has `complete`
    // != 0, or a dataset of `layout` is missing or of another shape or type (/step must hold
    // `written_steps`). Writes `attributes` on the root and flushes, keeping the rows written.
    static ResultFile reopen(MPI_Comm comm, const std::string& path, bool overwrite,
                             const ResultFileLayout& layout, const Attributes& attributes);

    // Not collective; rank 0, while no rank has the file open: the root attribute `name` of
    // `file_path`, read serially, e.g. a .partial's `config_toml` before a resume. None when the
    // file or the attribute does not exist; a usage error when the file is not HDF5 or the
    // attribute is not a scalar string, integer or float.
    static std::optional<AttributeValue> read_root_attribute(const std::string& file_path,
                                                             const std::string& name);

    // Independent (the calling rank only; errors on it alone): writes row `row` (an index into
    // written_steps) of pair `pair` in the `set`-th /y (0 without row sets) from `elements`
    // values of y_type at `data`.
    void write_y_row(std::size_t set, std::uint64_t pair, std::uint64_t row, const void* data);
    // Independent: sets which step row `row` of the `set`-th /y holds (/step), for a row the
    // layout could not place before the run (the last step of a run its duration ended).
    void write_row_step(std::size_t set, std::uint64_t row, std::int64_t step);
    // Independent: writes row `row` of the matrix declared as `path`, `cols` values of its type.
    void write_matrix_row(const std::string& path, std::uint64_t row, const void* data);

    // Collective: flushes what every rank has written so far to disk.
    void flush();

    // Collective: writes `group_attributes` on their (existing) groups ("/" for the root) and
    // flushes: what a finished part of the run (one size of several) says of itself.
    void write_attributes(const GroupAttributes& group_attributes);

    // Collective: writes `attributes` on the root and `group_attributes` on their groups, sets
    // `complete` to 1 or 0, closes the file (whatever failed) and, when complete, renames
    // PATH.partial to PATH once every rank has closed it; any rank's failure is every rank's error.
    void close(bool complete, const Attributes& attributes,
               const GroupAttributes& group_attributes = {});

    const std::string& path() const;          // the final path
    const std::string& partial_path() const;  // path() + ".partial", written while it runs

    ResultFile(ResultFile&&) noexcept;
    ResultFile& operator=(ResultFile&&) noexcept;
    ResultFile(const ResultFile&) = delete;
    ResultFile& operator=(const ResultFile&) = delete;
    // Collective when close() was not called: closes the file quietly (never throws, no rename),
    // leaving PATH.partial with complete = 0.
    ~ResultFile();

  private:
    struct State;
    explicit ResultFile(std::unique_ptr<State> state) noexcept;
    // The open file's state for `call`; a runtime error once moved from or closed.
    State& open_state(const char* call);
    std::unique_ptr<State> state_;
};

// Version string of the HDF5 library in use, e.g. "1.10.8".
std::string hdf5_version();

}  // namespace gpurelay
