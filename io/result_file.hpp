// The run's HDF5 result file, written by every rank with parallel HDF5 as PATH.partial, renamed to
// PATH when the run completes. Collective calls (create, reopen, flush, close, the destructor) are
// made by every rank in the same order with the same arguments; HDF5 here is not thread-safe.
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

// A dataset's "units" and "description" attributes and dimension labels (h5py: dims[i].label).
struct DatasetNotes {
    std::string units, description;
    std::vector<std::string> dims;
};

// A bool is stored as h5py stores one (an 8-bit enum {FALSE = 0, TRUE = 1}); a list of integers
// as a 1-D int64 array (the root's `elements`; never read back).
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
    // Collective; the caller holds the OutputLock. Rank 0 applies check_target() and makes the
    // whole file serially as PATH.partial.tmp, renamed PATH.partial (matrices NaN or 0, `complete`
    // = 0), so a failure there is one error on every rank; then every rank opens it (MPI-IO).
    static ResultFile create(MPI_Comm comm, const std::string& path, bool overwrite,
                             const ResultFileLayout& layout, const Attributes& attributes);

    // Rank 0, before any file work: create()'s rule for `path` (usage errors). Its folder takes new
    // names; PATH and PATH.partial are nothing or regular files; an existing PATH needs
    // `overwrite`, and so does a PATH.partial that --resume could finish.
    static void check_target(const std::string& path, bool overwrite);

    // How to start afresh over a PATH.partial that --resume cannot continue, as check_target()
    // rules: "run again without --resume ...", or "... with --overwrite".
    static std::string fresh_start_advice(const std::string& path);

    // Rank 0: renames a complete PATH.partial (its run ended before the rename), as check_target().
    static void publish_complete_partial(const std::string& path, bool overwrite);

    // Collective: reopens a stopped run's PATH.partial for --resume; every rank leaves with rank
    // 0's usage error when it is missing, not HDF5, complete, or unlike `layout` (/step must hold
    // `written_steps`). Writes `attributes` on the root and flushes, keeping the rows written.
    static ResultFile reopen(MPI_Comm comm, const std::string& path, bool overwrite,
                             const ResultFileLayout& layout, const Attributes& attributes);

    // Rank 0, no rank having the file open: a root attribute, read serially; none when missing; a
    // usage error when not HDF5 or not a scalar string, integer or float.
    static std::optional<AttributeValue> read_root_attribute(const std::string& file_path,
                                                             const std::string& name);

    // Independent (errors on the calling rank alone): row `row` (an index into written_steps) of
    // `pair` in the `set`-th /y (0 without row sets), `elements` values of y_type.
    void write_y_row(std::size_t set, std::uint64_t pair, std::uint64_t row, const void* data);
    // Independent: sets which step row `row` of the `set`-th /y holds (/step), for a row the
    // layout could not place before the run (the last step of a run its duration ended).
    void write_row_step(std::size_t set, std::uint64_t row, std::int64_t step);
    // Independent: writes row `row` of the matrix declared as `path`, `cols` values of its type.
    void write_matrix_row(const std::string& path, std::uint64_t row, const void* data);

    void flush();  // collective

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
    // Collective when close() was not called: closes quietly, leaving PATH.partial incomplete.
    ~ResultFile();

  private:
    struct State;
    explicit ResultFile(std::unique_ptr<State> state) noexcept;
    State& open_state(const char* call);
    std::unique_ptr<State> state_;
};

// Version string of the HDF5 library in use, e.g. "1.10.8".
std::string hdf5_version();

}  // namespace gpurelay
