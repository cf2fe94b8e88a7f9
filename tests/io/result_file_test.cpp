// ResultFile under mpirun (any rank count): every rank writes its rows, rank 0 reads the file back
// serially with the HDF5 C API after close and checks every element and attribute.
#include "io/result_file.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <hdf5_hl.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "io/h5.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

namespace fs = std::filesystem;

int world_rank() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

int world_size() {
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
}

// The run's scratch folder, made by rank 0 in main() and shared with every rank.
std::string& scratch_dir() {
    static std::string dir;
    return dir;
}

std::string broadcast_from_rank0(std::string text) {
    unsigned long long length = text.size();
    MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    text.resize(length);
    MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, MPI_COMM_WORLD);
    return text;
}

// A path unique to the running test.
std::string scratch_path(const std::string& name) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string test = std::string(info->test_suite_name()) + "." + info->name();
    for (char& c : test) {
        if (c == '/') {
            c = '_';
        }
    }
    const fs::path dir = fs::path(scratch_dir()) / test;
    if (world_rank() == 0) {
        fs::create_directories(dir);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return (dir / name).string();
}

void write_text_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// --- Serial read-back with the C API (rank 0, after close) -------------------------------------

template <typename Result>
Result check(Result result, const std::string& what) {
    if (result < 0) {
        throw std::runtime_error("HDF5 read-back failed: " + what);
    }
    return result;
}

H5File open_serial(const std::string& path) {
    return H5File(check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open " + path));
}

bool link_exists(hid_t file, const std::string& path) {
    return check(H5Lexists(file, path.c_str(), H5P_DEFAULT), "H5Lexists " + path) > 0;
}

std::vector<hsize_t> dataset_dims(hid_t dataset) {
    H5Dataspace space(check(H5Dget_space(dataset), "H5Dget_space"));
    const int rank = check(H5Sget_simple_extent_ndims(space.get()), "ndims");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), "dims");
    return dims;
}

// Reads a whole dataset, checking its stored type is `file_type` and its shape `expected_dims`.
template <typename T>
std::vector<T> read_dataset(hid_t file, const std::string& path, hid_t file_type, hid_t memory_type,
                            const std::vector<hsize_t>& expected_dims) {
    H5Dataset dataset(check(H5Dopen2(file, path.c_str(), H5P_DEFAULT), "open " + path));
    H5Datatype stored(check(H5Dget_type(dataset.get()), "type of " + path));
    EXPECT_GT(H5Tequal(stored.get(), file_type), 0) << path << " has the wrong type";
    const std::vector<hsize_t> dims = dataset_dims(dataset.get());
    EXPECT_EQ(dims, expected_dims) << path;
    if (dims != expected_dims) {
        return {};
    }
    hsize_t count = 1;
    for (hsize_t d : dims) {
        count *= d;
    }
    std::vector<T> values(count);
    check(H5Dread(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
          "read " + path);
    return values;
}

H5Attribute open_root_attribute(hid_t file, const std::string& name) {
    return H5Attribute(check(H5Aopen(file, name.c_str(), H5P_DEFAULT), "open attribute " + name));
}

std::int64_t read_int_attribute(hid_t file, const std::string& name) {
    H5Attribute attribute = open_root_attribute(file, name);
    H5Datatype type(check(H5Aget_type(attribute.get()), "type of " + name));
    EXPECT_GT(H5Tequal(type.get(), H5T_STD_I64LE), 0) << name << " is not int64";
    std::int64_t value = 0;
    check(H5Aread(attribute.get(), H5T_NATIVE_INT64, &value), "read " + name);
    return value;
}

double read_double_attribute(hid_t file, const std::string& name) {
    H5Attribute attribute = open_root_attribute(file, name);
    H5Datatype type(check(H5Aget_type(attribute.get()), "type of " + name));
    EXPECT_GT(H5Tequal(type.get(), H5T_IEEE_F64LE), 0) << name << " is not float64";
    double value = 0;
    check(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value), "read " + name);
    return value;
}

std::string read_string_attribute(hid_t file, const std::string& name) {
    H5Attribute attribute = open_root_attribute(file, name);
    H5Datatype type(check(H5Aget_type(attribute.get()), "type of " + name));
    EXPECT_EQ(H5Tget_class(type.get()), H5T_STRING) << name;
    EXPECT_GT(H5Tis_variable_str(type.get()), 0) << name;
    EXPECT_EQ(H5Tget_cset(type.get()), H5T_CSET_UTF8) << name;
    char* text = nullptr;
    check(H5Aread(attribute.get(), type.get(), &text), "read " + name);
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return value;
}

herr_t collect_attribute_name(hid_t, const char* name, const H5A_info_t*, void* names) {
    static_cast<std::vector<std::string>*>(names)->emplace_back(name);
    return 0;
}

std::vector<std::string> root_attribute_names(hid_t file) {
    std::vector<std::string> names;
    check(H5Aiterate2(file, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_attribute_name, &names),
          "iterate attributes");
    return names;
}

// --- What ranks write -----------------------------------------------------------------------

constexpr std::uint64_t pairs = 2;
const std::vector<std::int64_t> written_steps = {0, 5, 9};
constexpr std::uint64_t elements = 1000;

// Which rank writes row `row` of pair `pair`: rows are dealt round-robin.
int owner(std::uint64_t pair, std::uint64_t row) {
    return static_cast<int>((pair * written_steps.size() + row) % world_size());
}

// Exact in float32 as well: below 2^24, halves only.
double y_value(int writer, std::uint64_t pair, std::uint64_t row, std::uint64_t element) {
    return static_cast<double>(writer) * 100000.0 + static_cast<double>(pair) * 10000.0 +
           static_cast<double>(row) * 1000.0 + static_cast<double>(element) + 0.5;
}

template <typename T>
std::vector<T> y_row(int writer, std::uint64_t pair, std::uint64_t row) {
    std::vector<T> values(elements);
    for (std::uint64_t e = 0; e < elements; ++e) {
        values[e] = static_cast<T>(y_value(writer, pair, row, e));
    }
    return values;
}

ResultFileLayout small_layout(ElementType y_type) {
    const auto size = static_cast<std::uint64_t>(world_size());
    ResultFileLayout layout;
    layout.pairs = pairs;
    layout.written_steps = written_steps;
    layout.elements = elements;
    layout.y_type = y_type;
    // One row more than ranks: the last stays unwritten and must read back as the fill value.
    layout.matrices = {
        {"timings/step_seconds", ElementType::float64, size + 1, 4},
        {"/timings/window_ms", ElementType::float32, size + 1, 3},
        {"counts/bytes", ElementType::uint64, pairs * written_steps.size(), 2},
        {"counts/delta", ElementType::int64, size + 1, 2},
    };
    return layout;
}

const Attributes create_attributes = {
    {"title", std::string("gpurelay test")},
    {"unicode", std::string("µs — ✓")},
    {"steps", std::int64_t{20}},
    {"alpha", 2.5},
};
const Attributes close_attributes = {
    {"elapsed_s", 1.25},
    {"steps", std::int64_t{21}},  // replaces the value given at create
    {"note", std::string("done")},
};

// This rank's share of the /y rows of `pair`, with their rows of counts/bytes.
template <typename T>
void write_pair_rows(ResultFile& file, std::uint64_t pair) {
    const int rank = world_rank();
    for (std::uint64_t row = 0; row < written_steps.size(); ++row) {
        if (owner(pair, row) == rank) {
            const std::vector<T> values = y_row<T>(rank, pair, row);
            file.write_y_row(0, pair, row, values.data());
            const std::uint64_t index = pair * written_steps.size() + row;
            const std::uint64_t bytes[2] = {(1ull << 40) + index, static_cast<std::uint64_t>(rank)};
            file.write_matrix_row("counts/bytes", index, bytes);
        }
    }
}

// This rank's own row of each per-rank matrix.
void write_rank_rows(ResultFile& file) {
    const int rank = world_rank();
    const auto r = static_cast<std::uint64_t>(rank);
    const double seconds[4] = {rank + 0.25, rank + 1.25, rank + 2.25, rank + 3.25};
    file.write_matrix_row("timings/step_seconds", r, seconds);
    const float window[3] = {static_cast<float>(rank) + 0.5f, -1.5f, 1e30f};
    file.write_matrix_row("timings/window_ms", r, window);
    const std::int64_t delta[2] = {-(rank + 1), std::numeric_limits<std::int64_t>::min() + rank};
    file.write_matrix_row("/counts/delta", r, delta);
}

// Every rank writes its share of /y and of each matrix; flushes halfway through.
template <typename T>
void write_all_rows(ResultFile& file) {
    for (std::uint64_t pair = 0; pair < pairs; ++pair) {
        write_pair_rows<T>(file, pair);
    }
    file.flush();
    write_rank_rows(file);
}

template <typename T>
void expect_y_and_step(hid_t file) {
    const hid_t file_type = std::is_same_v<T, float> ? H5T_IEEE_F32LE : H5T_IEEE_F64LE;
    const hid_t memory_type = std::is_same_v<T, float> ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
    const std::vector<T> y = read_dataset<T>(file, "/y", file_type, memory_type,
                                             {pairs, written_steps.size(), elements});
    std::size_t wrong = 0;
    for (std::uint64_t pair = 0; pair < pairs && !y.empty(); ++pair) {
        for (std::uint64_t row = 0; row < written_steps.size(); ++row) {
            const std::vector<T> expected = y_row<T>(owner(pair, row), pair, row);
            for (std::uint64_t e = 0; e < elements; ++e) {
                const T got = y[(pair * written_steps.size() + row) * elements + e];
                if (got != expected[e] && wrong++ < 5) {
                    ADD_FAILURE() << "/y[" << pair << "," << row << "," << e << "] = " << got
                                  << ", expected " << expected[e];
                }
            }
        }
    }
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(read_dataset<std::int64_t>(file, "/step", H5T_STD_I64LE, H5T_NATIVE_INT64,
                                         {written_steps.size()}),
              written_steps);
}

void expect_matrices(hid_t file) {
    const auto size = static_cast<std::uint64_t>(world_size());
    const std::vector<double> seconds = read_dataset<double>(
        file, "/timings/step_seconds", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {size + 1, 4});
    const std::vector<float> window = read_dataset<float>(
        file, "/timings/window_ms", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {size + 1, 3});
    const std::vector<std::int64_t> delta = read_dataset<std::int64_t>(
        file, "/counts/delta", H5T_STD_I64LE, H5T_NATIVE_INT64, {size + 1, 2});
    const std::vector<std::uint64_t> bytes = read_dataset<std::uint64_t>(
        file, "/counts/bytes", H5T_STD_U64LE, H5T_NATIVE_UINT64, {pairs * written_steps.size(), 2});
    if (seconds.empty() || window.empty() || delta.empty() || bytes.empty()) {
        return;
    }
    for (std::uint64_t r = 0; r < size; ++r) {
        const auto rank = static_cast<int>(r);
        for (std::uint64_t c = 0; c < 4; ++c) {
            EXPECT_EQ(seconds[r * 4 + c], rank + 0.25 + static_cast<double>(c)) << r << "," << c;
        }
        EXPECT_EQ(window[r * 3 + 0], static_cast<float>(rank) + 0.5f);
        EXPECT_EQ(window[r * 3 + 1], -1.5f);
        EXPECT_EQ(window[r * 3 + 2], 1e30f);
        EXPECT_EQ(delta[r * 2 + 0], -(rank + 1));
        EXPECT_EQ(delta[r * 2 + 1], std::numeric_limits<std::int64_t>::min() + rank);
    }
    for (std::uint64_t c = 0; c < 4; ++c) {
        EXPECT_TRUE(std::isnan(seconds[size * 4 + c])) << "unwritten float64 row, col " << c;
    }
    for (std::uint64_t c = 0; c < 3; ++c) {
        EXPECT_TRUE(std::isnan(window[size * 3 + c])) << "unwritten float32 row, col " << c;
    }
    EXPECT_EQ(delta[size * 2 + 0], 0);
    EXPECT_EQ(delta[size * 2 + 1], 0);
    for (std::uint64_t pair = 0; pair < pairs; ++pair) {
        for (std::uint64_t row = 0; row < written_steps.size(); ++row) {
            const std::uint64_t index = pair * written_steps.size() + row;
            EXPECT_EQ(bytes[index * 2 + 0], (1ull << 40) + index);
            EXPECT_EQ(bytes[index * 2 + 1], static_cast<std::uint64_t>(owner(pair, row)));
        }
    }
}

// Every rank must see the same error; compares each rank's text with rank 0's.
void expect_same_on_every_rank(const std::string& text) {
    const std::string rank0 = broadcast_from_rank0(text);
    EXPECT_EQ(text, rank0) << "rank " << world_rank() << " saw a different error";
    EXPECT_EQ(text.find('\n'), std::string::npos) << "not one line: " << text;
}

class ResultFileTest : public ::testing::Test {
  protected:
    // Rank 0 checks files alone; the others wait, so the next test starts together.
    void TearDown() override { MPI_Barrier(MPI_COMM_WORLD); }
};

template <typename T>
class ResultFileRoundTrip : public ResultFileTest {};
using YTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ResultFileRoundTrip, YTypes);

TYPED_TEST(ResultFileRoundTrip, EveryRankWritesItsRowsAndRank0ReadsThemBack) {
    const ElementType y_type =
        std::is_same_v<TypeParam, float> ? ElementType::float32 : ElementType::float64;
    const std::string path = scratch_path("out.h5");
    ResultFile file =
        ResultFile::create(MPI_COMM_WORLD, path, false, small_layout(y_type), create_attributes);
    EXPECT_EQ(file.path(), path);
    EXPECT_EQ(file.partial_path(), path + ".partial");
    write_all_rows<TypeParam>(file);
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) {
        EXPECT_FALSE(fs::exists(path)) << "the final name must not exist before close";
        EXPECT_TRUE(fs::exists(path + ".partial"));
    }
    file.close(true, close_attributes);

    if (world_rank() != 0) {
        return;
    }
    EXPECT_TRUE(fs::exists(path));
    EXPECT_FALSE(fs::exists(path + ".partial"));
    H5File read = open_serial(path);
    expect_y_and_step<TypeParam>(read.get());
    expect_matrices(read.get());
    EXPECT_EQ(read_string_attribute(read.get(), "title"), "gpurelay test");
    EXPECT_EQ(read_string_attribute(read.get(), "unicode"), "µs — ✓");
    EXPECT_EQ(read_string_attribute(read.get(), "note"), "done");
    EXPECT_EQ(read_int_attribute(read.get(), "steps"), 21);
    EXPECT_EQ(read_double_attribute(read.get(), "alpha"), 2.5);
    EXPECT_EQ(read_double_attribute(read.get(), "elapsed_s"), 1.25);
    EXPECT_EQ(read_int_attribute(read.get(), "complete"), 1);
    const std::vector<std::string> expected_names = {"alpha", "complete", "elapsed_s", "note",
                                                     "steps", "title",    "unicode"};
    EXPECT_EQ(root_attribute_names(read.get()), expected_names);
}

// The text attribute `attribute` of `object` in the open file `file`.
std::string text_attribute(hid_t file, const char* object, const char* attribute) {
    H5Attribute a(check(H5Aopen_by_name(file, object, attribute, H5P_DEFAULT, H5P_DEFAULT),
                        std::string("open ") + object + " " + attribute));
    H5Datatype memory(check(H5Tcopy(H5T_C_S1), "copy"));
    check(H5Tset_size(memory.get(), H5T_VARIABLE), "size");
    char* text = nullptr;
    check(H5Aread(a.get(), memory.get(), &text), "read text");
    std::string value = text;
    H5free_memory(text);
    return value;
}

// Issue #26: the file describes itself. Booleans are h5py's enum {FALSE, TRUE} (read back as
// bool), datasets carry units, a description and dimension labels, /step is /y's dimension
// scale, and groups carry the attributes given at create and at close.
TEST_F(ResultFileTest, DescribesItselfWithTypedBooleansNotesAndGroupAttributes) {
    const std::string path = scratch_path("notes.h5");
    ResultFileLayout layout = small_layout(ElementType::float64);
    layout.matrices[0].units = "s";
    layout.matrices[0].description = "seconds per step";
    layout.matrices[0].row_label = "rank";
    layout.matrices[0].col_label = "step";
    layout.y_notes = {"1", "the tensor", {"pair", "step", "element"}};
    layout.step_notes = {"1", "the step of each row", {"row"}};
    layout.group_attributes = {{"/timings", {{"description", std::string("times")}}}};
    ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, false, layout,
                                         {{"blocking", false}, {"graphs", true}});
    file.close(true, {{"verified", true}},
               {{"/counts", {{"ok", true}, {"wrong", std::int64_t{0}}}}});
    if (world_rank() != 0) return;
    EXPECT_EQ(ResultFile::read_root_attribute(path, "blocking"), AttributeValue(false));
    EXPECT_EQ(ResultFile::read_root_attribute(path, "graphs"), AttributeValue(true));
    EXPECT_EQ(ResultFile::read_root_attribute(path, "verified"), AttributeValue(true));
    H5File read = open_serial(path);
    {
        H5Attribute flag(check(H5Aopen(read.get(), "verified", H5P_DEFAULT), "open verified"));
        H5Datatype type(check(H5Aget_type(flag.get()), "type of verified"));
        EXPECT_EQ(H5Tget_class(type.get()), H5T_ENUM);
        EXPECT_EQ(H5Tget_size(type.get()), 1u);
        char name[8] = {};
        const std::int8_t yes = 1;
        check(H5Tenum_nameof(type.get(), &yes, name, sizeof name), "nameof TRUE");
        EXPECT_STREQ(name, "TRUE");
    }
    const auto text_of = [&](const char* object, const char* attribute) {
        return text_attribute(read.get(), object, attribute);
    };
    EXPECT_EQ(text_of("/timings/step_seconds", "units"), "s");
    EXPECT_EQ(text_of("/timings/step_seconds", "description"), "seconds per step");
    EXPECT_EQ(text_of("/y", "description"), "the tensor");
    {
        H5Dataset step(check(H5Dopen2(read.get(), "/step", H5P_DEFAULT), "open /step"));
        EXPECT_GT(check(H5DSis_scale(step.get()), "H5DSis_scale(/step)"), 0);
        H5Dataset y(check(H5Dopen2(read.get(), "/y", H5P_DEFAULT), "open /y"));
        EXPECT_GT(check(H5DSis_attached(y.get(), step.get(), 1), "H5DSis_attached"), 0);
        char label[16] = {};
        check(H5DSget_label(y.get(), 2, label, sizeof label), "H5DSget_label");
        EXPECT_STREQ(label, "element");
    }
    EXPECT_EQ(text_of("/timings", "description"), "times");
    EXPECT_TRUE(check(H5Aexists_by_name(read.get(), "/y", "DIMENSION_LIST", H5P_DEFAULT),
                      "y's scales") > 0);
    EXPECT_TRUE(check(H5Aexists_by_name(read.get(), "/timings/step_seconds", "DIMENSION_LABELS",
                                        H5P_DEFAULT),
                      "labels") > 0);
    EXPECT_TRUE(check(H5Aexists_by_name(read.get(), "/counts", "ok", H5P_DEFAULT), "ok") > 0);
}

TEST_F(ResultFileTest, IncompleteCloseLeavesPartialWithCompleteZero) {
    const std::string path = scratch_path("out.h5");
    ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, false,
                                         small_layout(ElementType::float64), create_attributes);
    write_all_rows<double>(file);
    file.close(false, {{"status", std::string("failed: peer timed out")}});

    if (world_rank() != 0) {
        return;
    }
    EXPECT_FALSE(fs::exists(path));
    ASSERT_TRUE(fs::exists(path + ".partial"));
    H5File read = open_serial(path + ".partial");
    EXPECT_EQ(read_int_attribute(read.get(), "complete"), 0);
    EXPECT_EQ(read_string_attribute(read.get(), "status"), "failed: peer timed out");
    EXPECT_EQ(read_int_attribute(read.get(), "steps"), 20);
    expect_y_and_step<double>(read.get());
    expect_matrices(read.get());
}

TEST_F(ResultFileTest, DestructorWithoutCloseLeavesReadablePartial) {
    const std::string path = scratch_path("out.h5");
    {
        ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, false,
                                             small_layout(ElementType::float32), create_attributes);
        write_all_rows<float>(file);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() != 0) {
        return;
    }
    EXPECT_FALSE(fs::exists(path));
    ASSERT_TRUE(fs::exists(path + ".partial"));
    H5File read = open_serial(path + ".partial");
    EXPECT_EQ(read_int_attribute(read.get(), "complete"), 0);
    EXPECT_EQ(read_string_attribute(read.get(), "title"), "gpurelay test");
    expect_y_and_step<float>(read.get());
    expect_matrices(read.get());
}

TEST_F(ResultFileTest, ExistingFileWithoutOverwriteIsUsageErrorOnEveryRank) {
    const std::string path = scratch_path("out.h5");
    const std::string sentinel = "an earlier run's results\n";
    if (world_rank() == 0) {
        write_text_file(path, sentinel);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    std::string message;
    try {
        ResultFile::create(MPI_COMM_WORLD, path, false, small_layout(ElementType::float32),
                           create_attributes);
        ADD_FAILURE() << "create() accepted an existing file";
    } catch (const Error& error) {
        EXPECT_EQ(error.code(), ExitCode::usage);
        message = error.what();
    }
    EXPECT_EQ(message, "output file '" + path + "' exists (use --overwrite to replace it)");
    expect_same_on_every_rank(message);
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) {
        EXPECT_EQ(read_text_file(path), sentinel);
        EXPECT_FALSE(fs::exists(path + ".partial"));
    }
}

TEST_F(ResultFileTest, OverwriteReplacesExistingFileOnlyAtCompleteClose) {
    const std::string path = scratch_path("out.h5");
    const std::string sentinel = "an earlier run's results\n";
    if (world_rank() == 0) {
        write_text_file(path, sentinel);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, true,
                                         small_layout(ElementType::float64), create_attributes);
    write_all_rows<double>(file);
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) {
        EXPECT_EQ(read_text_file(path), sentinel) << "replaced before the run completed";
    }
    file.close(true, close_attributes);
    if (world_rank() != 0) {
        return;
    }
    EXPECT_GT(H5Fis_hdf5(path.c_str()), 0);
    EXPECT_FALSE(fs::exists(path + ".partial"));
    H5File read = open_serial(path);
    EXPECT_EQ(read_int_attribute(read.get(), "complete"), 1);
    expect_y_and_step<double>(read.get());
}

TEST_F(ResultFileTest, FileThatAppearsDuringTheRunIsNotReplacedWithoutOverwrite) {
    const std::string path = scratch_path("out.h5");
    ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, false,
                                         small_layout(ElementType::float32), create_attributes);
    write_all_rows<float>(file);
    const std::string intruder = "written by someone else meanwhile\n";
    if (world_rank() == 0) {
        write_text_file(path, intruder);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    std::string message;
    try {
        file.close(true, {});
        ADD_FAILURE() << "close() replaced a file that appeared during the run";
    } catch (const Error& error) {
        EXPECT_EQ(error.code(), ExitCode::usage);
        message = error.what();
    }
    expect_same_on_every_rank(message);
    if (world_rank() != 0) {
        return;
    }
    EXPECT_EQ(read_text_file(path), intruder);
    H5File read = open_serial(path + ".partial");
    EXPECT_EQ(read_int_attribute(read.get(), "complete"), 1);
    expect_y_and_step<float>(read.get());
}

TEST_F(ResultFileTest, StalePartialFileIsReplaced) {
    const std::string path = scratch_path("out.h5");
    if (world_rank() == 0) {
        write_text_file(path + ".partial", std::string(100000, 'x'));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, false,
                                         small_layout(ElementType::float32), create_attributes);
    write_all_rows<float>(file);
    file.close(true, {});
    if (world_rank() != 0) {
        return;
    }
    H5File read = open_serial(path);
    EXPECT_EQ(read_int_attribute(read.get(), "complete"), 1);
    EXPECT_EQ(read_int_attribute(read.get(), "steps"), 20);
    expect_y_and_step<float>(read.get());
}

TEST_F(ResultFileTest, DirectoryUnderARegularFileIsOneLineErrorOnEveryRank) {
    const std::string plain = scratch_path("plain_file");
    if (world_rank() == 0) {
        write_text_file(plain, "not a directory");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    std::string message;
    try {
        ResultFile::create(MPI_COMM_WORLD, plain + "/sub/out.h5", false,
                           small_layout(ElementType::float32), {});
        ADD_FAILURE() << "create() succeeded under a regular file";
    } catch (const Error& error) {
        EXPECT_TRUE(error.code() == ExitCode::usage || error.code() == ExitCode::runtime);
        message = error.what();
    }
    EXPECT_NE(message.find(plain), std::string::npos) << message;
    expect_same_on_every_rank(message);
}

// Root may write anywhere on a normal file system, so the HDF5 failure path is reached through a
// file system that refuses new files whoever asks.
TEST_F(ResultFileTest, HdfCreateFailureIsOneLineRuntimeErrorOnEveryRank) {
    const std::string path =
        broadcast_from_rank0("/proc/gpurelay_result_file_test_" + std::to_string(getpid()) + ".h5");
    std::string message;
    try {
        ResultFile::create(MPI_COMM_WORLD, path, false, small_layout(ElementType::float32), {});
        ADD_FAILURE() << "create() succeeded in /proc";
    } catch (const Error& error) {
        EXPECT_TRUE(error.code() == ExitCode::usage || error.code() == ExitCode::runtime);
        message = error.what();
    }
    EXPECT_FALSE(message.empty());
    expect_same_on_every_rank(message);
    if (world_rank() == 0) {
        std::printf("[ note     ] create in /proc: %s\n", message.c_str());
    }
}

// create() refused with a usage error: its message (the same on every rank, checked).
std::string create_usage_error(const std::string& path, bool overwrite) {
    std::string message;
    try {
        ResultFile::create(MPI_COMM_WORLD, path, overwrite, small_layout(ElementType::float32), {});
        ADD_FAILURE() << "create('" << path << "') succeeded";
    } catch (const Error& error) {
        EXPECT_EQ(error.code(), ExitCode::usage);
        message = error.what();
    }
    expect_same_on_every_rank(message);
    return message;
}

TEST_F(ResultFileTest, PartialPathThatIsADirectoryIsUsageErrorOnEveryRank) {
    const std::string path = scratch_path("out.h5");
    if (world_rank() == 0) {
        fs::create_directories(path + ".partial/keep");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const std::string message = create_usage_error(path, true);
    EXPECT_EQ(message, "output: '" + path +
                           ".partial' is a directory: only a regular file is "
                           "ever replaced");
    if (world_rank() == 0) {
        EXPECT_TRUE(fs::is_directory(path + ".partial/keep"));
    }
}

// The folder is the user's to make (scripts/run makes outputs/): a missing one is a typo more
// often than not, and making it would hide that.
TEST_F(ResultFileTest, MissingOutputFolderIsUsageErrorOnEveryRank) {
    const std::string path = scratch_path("outputs/nested/out.h5");
    const std::string message = create_usage_error(path, false);
    EXPECT_EQ(message,
              "output: folder '" + fs::path(path).parent_path().string() + "' does not exist");
}

// A killed run's .partial that --resume can finish is kept unless overwrite says otherwise.
TEST_F(ResultFileTest, StoppedPartialIsKeptWithoutOverwrite) {
    const std::string path = scratch_path("out.h5");
    {
        ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, false,
                                             small_layout(ElementType::float32), create_attributes);
        file.close(false, {{"stopped_at_step", std::int64_t{3}}});
    }
    const std::string message = create_usage_error(path, false);
    EXPECT_EQ(message, "'" + path +
                           ".partial' holds a run stopped after step 3 that --resume can "
                           "finish: use --resume, or --overwrite to discard it");
    ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, true,
                                         small_layout(ElementType::float32), create_attributes);
    write_all_rows<float>(file);
    file.close(true, {});
    if (world_rank() == 0) {
        EXPECT_GT(H5Fis_hdf5(path.c_str()), 0);
    }
}

TEST_F(ResultFileTest, NoWrittenStepsMeansNoYAndNoStep) {
    const std::string path = scratch_path("out.h5");
    ResultFileLayout layout = small_layout(ElementType::float32);
    layout.written_steps.clear();
    ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, false, layout, create_attributes);
    const float row[1000] = {};
    EXPECT_THROW(file.write_y_row(0, 0, 0, row), Error);
    const std::int64_t delta[2] = {1, 2};
    file.write_matrix_row("counts/delta", 0, delta);
    file.close(true, {});
    if (world_rank() != 0) {
        return;
    }
    H5File read = open_serial(path);
    EXPECT_FALSE(link_exists(read.get(), "/y"));
    EXPECT_FALSE(link_exists(read.get(), "/step"));
    EXPECT_TRUE(link_exists(read.get(), "/counts/delta"));
}

TEST_F(ResultFileTest, BadRowsAndNamesThrowOnTheCallingRankOnly) {
    const std::string path = scratch_path("out.h5");
    ResultFile file =
        ResultFile::create(MPI_COMM_WORLD, path, false, small_layout(ElementType::float64), {});
    const std::vector<double> row(elements, 1.0);
    try {
        file.write_y_row(0, pairs, 0, row.data());
        ADD_FAILURE() << "pair out of range accepted";
    } catch (const Error& error) {
        EXPECT_EQ(error.code(), ExitCode::runtime);
        EXPECT_NE(std::string(error.what()).find("outside"), std::string::npos) << error.what();
    }
    EXPECT_THROW(file.write_y_row(0, 0, written_steps.size(), row.data()), Error);
    EXPECT_THROW(file.write_y_row(0, 0, 0, nullptr), Error);
    EXPECT_THROW(file.write_matrix_row("no/such/matrix", 0, row.data()), Error);
    EXPECT_THROW(file.write_matrix_row("counts/delta", world_size() + 1, row.data()), Error);
    // Only rank 0 gets it wrong here; nothing collective is involved, so nobody waits.
    if (world_rank() == 0) {
        EXPECT_THROW(file.write_matrix_row("counts/bytes", 1000, row.data()), Error);
    }
    file.close(true, {});
    EXPECT_THROW(file.write_y_row(0, 0, 0, row.data()), Error);
    EXPECT_THROW(file.flush(), Error);
    EXPECT_THROW(file.close(true, {}), Error);
}

TEST_F(ResultFileTest, ReservedOrDuplicateNamesFailOnEveryRankBeforeAnyFileIsMade) {
    const std::string path = scratch_path("out.h5");
    EXPECT_THROW(ResultFile::create(MPI_COMM_WORLD, path, false, small_layout(ElementType::float32),
                                    {{"complete", std::int64_t{1}}}),
                 Error);
    ResultFileLayout duplicate = small_layout(ElementType::float32);
    duplicate.matrices.push_back({"/counts/delta", ElementType::int64, 1, 1});
    EXPECT_THROW(ResultFile::create(MPI_COMM_WORLD, path, false, duplicate, {}), Error);
    ResultFileLayout reserved = small_layout(ElementType::float32);
    reserved.matrices.push_back({"y", ElementType::int64, 1, 1});
    EXPECT_THROW(ResultFile::create(MPI_COMM_WORLD, path, false, reserved, {}), Error);
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) {
        EXPECT_FALSE(fs::exists(path + ".partial"));
        EXPECT_FALSE(fs::exists(path));
    }
}

TEST_F(ResultFileTest, MovedFileKeepsWorking) {
    const std::string path = scratch_path("out.h5");
    ResultFile first = ResultFile::create(MPI_COMM_WORLD, path, false,
                                          small_layout(ElementType::float32), create_attributes);
    ResultFile file = std::move(first);
    EXPECT_TRUE(first.path().empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
    EXPECT_THROW(first.flush(), Error);
    write_all_rows<float>(file);
    file.close(true, {});
    if (world_rank() == 0) {
        H5File read = open_serial(path);
        expect_y_and_step<float>(read.get());
    }
}

// Rows big enough that a per-row copy or a 32-bit count would show; every element checked.
TEST_F(ResultFileTest, LargeRowsRoundTrip) {
    const char* large = std::getenv("GPURELAY_TEST_LARGE_ROWS");
    // 16 Mi float32 (64 MiB) per row by default; GPURELAY_TEST_LARGE_ROWS=1 gives 1 GiB rows.
    const std::uint64_t row_elements =
        (large != nullptr && std::string(large) == "1") ? (1ull << 28) : (1ull << 24);
    const std::string path = scratch_path("large.h5");
    ResultFileLayout layout;
    layout.pairs = 1;
    layout.written_steps.resize(static_cast<std::size_t>(world_size()));
    for (std::size_t i = 0; i < layout.written_steps.size(); ++i) {
        layout.written_steps[i] = static_cast<std::int64_t>(i);
    }
    layout.elements = row_elements;
    layout.y_type = ElementType::float32;
    ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, false, layout, {});
    const auto rank = static_cast<std::uint64_t>(world_rank());
    auto value = [](std::uint64_t row, std::uint64_t e) {
        return static_cast<float>((e * 7 + row * 1000003) % 16777213);
    };
    {
        std::vector<float> values(row_elements);
        for (std::uint64_t e = 0; e < row_elements; ++e) {
            values[e] = value(rank, e);
        }
        file.write_y_row(0, 0, rank, values.data());
    }
    file.close(true, {});
    if (world_rank() != 0) {
        return;
    }
    H5File read = open_serial(path);
    H5Dataset y(check(H5Dopen2(read.get(), "/y", H5P_DEFAULT), "open /y"));
    std::vector<float> values(row_elements);
    for (std::uint64_t row = 0; row < static_cast<std::uint64_t>(world_size()); ++row) {
        H5Dataspace file_space(check(H5Dget_space(y.get()), "space"));
        const hsize_t start[3] = {0, row, 0};
        const hsize_t count[3] = {1, 1, row_elements};
        check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr),
              "select");
        const hsize_t memory_count = row_elements;
        H5Dataspace memory_space(check(H5Screate_simple(1, &memory_count, nullptr), "memory"));
        check(H5Dread(y.get(), H5T_NATIVE_FLOAT, memory_space.get(), file_space.get(), H5P_DEFAULT,
                      values.data()),
              "read row");
        std::uint64_t wrong = 0;
        for (std::uint64_t e = 0; e < row_elements; ++e) {
            wrong += values[e] != value(row, e) ? 1 : 0;
        }
        EXPECT_EQ(wrong, 0u) << "row " << row;
    }
}

// --- Resuming a .partial file ---------------------------------------------------------------

// A run that stopped after pair 0: PATH.partial with complete = 0 and pair 1 unwritten.
void leave_partial(const std::string& path, const ResultFileLayout& layout) {
    ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, false, layout, create_attributes);
    write_pair_rows<float>(file, 0);
    file.close(false, {{"stopped_at_step", std::int64_t{5}}});
}

// reopen() must fail with this usage error, the same on every rank.
void expect_reopen_usage_error(const std::string& path, bool overwrite,
                               const ResultFileLayout& layout, const std::string& expected) {
    std::string message;
    try {
        ResultFile::reopen(MPI_COMM_WORLD, path, overwrite, layout, {});
        ADD_FAILURE() << "reopen() succeeded; expected: " << expected;
    } catch (const Error& error) {
        EXPECT_EQ(error.code(), ExitCode::usage) << error.what();
        message = error.what();
    }
    EXPECT_EQ(message, expected);
    expect_same_on_every_rank(message);
}

TEST_F(ResultFileTest, ReopenFillsInTheRowsLeftByARunThatStoppedEarly) {
    const std::string path = scratch_path("out.h5");
    const ResultFileLayout layout = small_layout(ElementType::float32);
    leave_partial(path, layout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) {
        EXPECT_FALSE(fs::exists(path));
        EXPECT_TRUE(fs::exists(path + ".partial"));
    }

    ResultFile file = ResultFile::reopen(
        MPI_COMM_WORLD, path, false, layout,
        {{"resumed_from_step", std::int64_t{5}}, {"title", std::string("gpurelay test, resumed")}});
    EXPECT_EQ(file.path(), path);
    EXPECT_EQ(file.partial_path(), path + ".partial");
    write_pair_rows<float>(file, 1);
    file.flush();
    write_rank_rows(file);
    file.close(true, close_attributes);

    if (world_rank() != 0) {
        return;
    }
    EXPECT_TRUE(fs::exists(path));
    EXPECT_FALSE(fs::exists(path + ".partial"));
    H5File read = open_serial(path);
    expect_y_and_step<float>(read.get());  // pair 0 from before the reopen, pair 1 from after
    expect_matrices(read.get());
    EXPECT_EQ(read_int_attribute(read.get(), "complete"), 1);
    EXPECT_EQ(read_int_attribute(read.get(), "resumed_from_step"), 5);
    EXPECT_EQ(read_int_attribute(read.get(), "stopped_at_step"), 5);
    EXPECT_EQ(read_string_attribute(read.get(), "title"), "gpurelay test, resumed");
    EXPECT_EQ(read_string_attribute(read.get(), "unicode"), "µs — ✓");
    EXPECT_EQ(read_int_attribute(read.get(), "steps"), 21);
}

// A run of several sizes: one y and step per group, each its own length, and attributes written
// on groups and the root while the file is open.
TEST_F(ResultFileTest, RowSetsHoldOneYPerGroupAndAttributesArriveMidRun) {
    const std::string path = scratch_path("sizes.h5");
    ResultFileLayout layout;
    layout.pairs = pairs;
    layout.written_steps = {1, 3};
    layout.y_type = ElementType::float32;
    layout.row_sets = {{"/cases/0", 5}, {"/cases/1", 7}};
    layout.matrices = {{"/cases/0/timings/t", ElementType::float64, 1, 2},
                       {"/cases/1/timings/t", ElementType::float64, 1, 2}};
    ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, false, layout, create_attributes);
    const auto rank = static_cast<std::uint64_t>(world_rank());
    if (rank < pairs) {
        for (std::size_t set = 0; set < 2; ++set) {
            for (std::uint64_t row = 0; row < 2; ++row) {
                std::vector<float> values(set == 0 ? 5 : 7);
                for (std::size_t e = 0; e < values.size(); ++e) {
                    values[e] = static_cast<float>(1000 * set + 100 * rank + 10 * row + e);
                }
                file.write_y_row(set, rank, row, values.data());
            }
        }
        const std::vector<float> one(7);
        EXPECT_THROW(file.write_y_row(2, rank, 0, one.data()), Error);  // no third set
    }
    file.write_attributes(
        {{"/cases/0", {{"elements", std::int64_t{5}}}}, {"/", {{"sizes_done", std::int64_t{1}}}}});
    file.close(true, {{"sizes_done", std::int64_t{2}}});
    if (world_rank() != 0) return;
    H5File read = open_serial(path);
    EXPECT_EQ(H5Lexists(read.get(), "/y", H5P_DEFAULT), 0);  // nothing at the root
    for (std::size_t set = 0; set < 2; ++set) {
        const std::string group = "/cases/" + std::to_string(set);
        const hsize_t length = set == 0 ? 5 : 7;
        const std::vector<float> y = read_dataset<float>(read.get(), group + "/y", H5T_IEEE_F32LE,
                                                         H5T_NATIVE_FLOAT, {pairs, 2, length});
        ASSERT_EQ(y.size(), pairs * 2 * length);
        for (std::uint64_t p = 0; p < pairs && p < static_cast<std::uint64_t>(world_size()); ++p) {
            for (std::uint64_t row = 0; row < 2; ++row) {
                for (hsize_t e = 0; e < length; ++e) {
                    EXPECT_EQ(y[(p * 2 + row) * length + e],
                              static_cast<float>(1000 * set + 100 * p + 10 * row + e))
                        << group << " pair " << p << " row " << row;
                }
            }
        }
        EXPECT_EQ(read_dataset<std::int64_t>(read.get(), group + "/step", H5T_STD_I64LE,
                                             H5T_NATIVE_INT64, {2}),
                  (std::vector<std::int64_t>{1, 3}));
    }
    H5Group first(check(H5Gopen2(read.get(), "/cases/0", H5P_DEFAULT), "open /cases/0"));
    EXPECT_EQ(read_int_attribute(first.get(), "elements"), 5);
    EXPECT_EQ(read_int_attribute(read.get(), "sizes_done"), 2);  // the close's replaces it
}

TEST_F(ResultFileTest, ReopenWithoutPartialIsUsageErrorOnEveryRank) {
    const std::string path = scratch_path("out.h5");
    expect_reopen_usage_error(path, false, small_layout(ElementType::float32),
                              "nothing to resume: '" + path + ".partial' does not exist");
}

TEST_F(ResultFileTest, ReopenOfACompleteFileIsUsageErrorOnEveryRank) {
    const std::string path = scratch_path("out.h5");
    ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, false,
                                         small_layout(ElementType::float32), create_attributes);
    write_all_rows<float>(file);
    file.close(true, {});
    if (world_rank() == 0) {
        fs::rename(path, path + ".partial");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_reopen_usage_error(path, false, small_layout(ElementType::float32),
                              "nothing to resume: '" + path + ".partial' is complete");
}

TEST_F(ResultFileTest, ReopenWithAnotherLayoutIsUsageErrorNamingTheDataset) {
    const std::string path = scratch_path("out.h5");
    const std::string partial = path + ".partial";
    const ResultFileLayout layout = small_layout(ElementType::float32);
    leave_partial(path, layout);

    ResultFileLayout fewer_elements = layout;
    fewer_elements.elements = elements - 1;
    expect_reopen_usage_error(path, false, fewer_elements,
                              "cannot resume '" + partial +
                                  "': /y has shape [2, 3, 1000] but this run needs [2, 3, 999]");
    ResultFileLayout other_type = layout;
    other_type.y_type = ElementType::float64;
    expect_reopen_usage_error(
        path, false, other_type,
        "cannot resume '" + partial + "': /y has type float32 but this run needs float64");
    ResultFileLayout more_matrices = layout;
    more_matrices.matrices.push_back({"extra/rows", ElementType::int64, 1, 1});
    expect_reopen_usage_error(path, false, more_matrices,
                              "cannot resume '" + partial + "': /extra/rows does not exist");
    ResultFileLayout other_cols = layout;
    other_cols.matrices[1].cols = 5;
    expect_reopen_usage_error(path, false, other_cols,
                              "cannot resume '" + partial + "': /timings/window_ms has shape [" +
                                  std::to_string(world_size() + 1) + ", 3] but this run needs [" +
                                  std::to_string(world_size() + 1) + ", 5]");
    ResultFileLayout other_steps = layout;
    other_steps.written_steps = {0, 5, 10};
    expect_reopen_usage_error(
        path, false, other_steps,
        "cannot resume '" + partial + "': /step holds other steps than this run writes");

    // Refused attempts leave the .partial as it was: the right layout still resumes it.
    ResultFile file = ResultFile::reopen(MPI_COMM_WORLD, path, false, layout, {});
    write_pair_rows<float>(file, 1);
    write_rank_rows(file);
    file.close(true, {});
    if (world_rank() == 0) {
        H5File read = open_serial(path);
        expect_y_and_step<float>(read.get());
        expect_matrices(read.get());
    }
}

TEST_F(ResultFileTest, ReopenWhenTheFinalFileExistsNeedsOverwrite) {
    const std::string path = scratch_path("out.h5");
    const ResultFileLayout layout = small_layout(ElementType::float32);
    leave_partial(path, layout);
    const std::string sentinel = "an earlier run's results\n";
    if (world_rank() == 0) {
        write_text_file(path, sentinel);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_reopen_usage_error(path, false, layout,
                              "output file '" + path + "' exists (use --overwrite to replace it)");

    ResultFile file = ResultFile::reopen(MPI_COMM_WORLD, path, true, layout, {});
    write_pair_rows<float>(file, 1);
    write_rank_rows(file);
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) {
        EXPECT_EQ(read_text_file(path), sentinel) << "replaced before the run completed";
    }
    file.close(true, {});
    if (world_rank() == 0) {
        H5File read = open_serial(path);
        EXPECT_EQ(read_int_attribute(read.get(), "complete"), 1);
        expect_y_and_step<float>(read.get());
    }
}

TEST_F(ResultFileTest, ReopenOfANonHdf5PartialIsUsageErrorOnEveryRank) {
    const std::string path = scratch_path("out.h5");
    if (world_rank() == 0) {
        write_text_file(path + ".partial", "not HDF5\n");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_reopen_usage_error(path, false, small_layout(ElementType::float32),
                              "cannot resume '" + path + ".partial': not an HDF5 file");
}

// A root attribute of a type that ResultFile never writes itself, written serially.
template <typename Value>
void write_serial_attribute(hid_t file, const std::string& name, hid_t file_type, hid_t memory_type,
                            const Value& value) {
    H5Dataspace scalar(check(H5Screate(H5S_SCALAR), "scalar"));
    H5Attribute attribute(check(
        H5Acreate2(file, name.c_str(), file_type, scalar.get(), H5P_DEFAULT, H5P_DEFAULT), name));
    check(H5Awrite(attribute.get(), memory_type, &value), "write " + name);
}

TEST_F(ResultFileTest, ReadRootAttributeReadsStringsIntegersAndFloats) {
    const std::string path = scratch_path("out.h5");
    const std::string config = "[run]\nsteps = 20\nname = \"µs\"\n";
    ResultFile file = ResultFile::create(
        MPI_COMM_WORLD, path, false, small_layout(ElementType::float32),
        {{"config_toml", config}, {"stopped_at_step", std::int64_t{-7}}, {"alpha", 2.5}});
    file.close(false, {});
    const std::string other = scratch_path("other.h5");
    const std::string text = scratch_path("text.h5");
    if (world_rank() != 0) {
        return;
    }
    const std::string partial = path + ".partial";
    EXPECT_EQ(ResultFile::read_root_attribute(partial, "config_toml"), AttributeValue(config));
    EXPECT_EQ(ResultFile::read_root_attribute(partial, "stopped_at_step"),
              AttributeValue(std::int64_t{-7}));
    EXPECT_EQ(ResultFile::read_root_attribute(partial, "alpha"), AttributeValue(2.5));
    EXPECT_EQ(ResultFile::read_root_attribute(partial, "complete"),
              AttributeValue(std::int64_t{0}));
    EXPECT_EQ(ResultFile::read_root_attribute(partial, "no_such_attribute"), std::nullopt);
    EXPECT_EQ(ResultFile::read_root_attribute(path, "config_toml"), std::nullopt);

    // Types other tools write: fixed-length strings, narrower integers and floats.
    {
        H5File written(check(H5Fcreate(other.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                             "create " + other));
        H5Datatype fixed(check(H5Tcopy(H5T_C_S1), "string type"));
        check(H5Tset_size(fixed.get(), 8), "string size");
        const char padded[8] = {'a', 'b', 'c'};
        write_serial_attribute(written.get(), "fixed", fixed.get(), fixed.get(), padded);
        write_serial_attribute(written.get(), "int32", H5T_STD_I32LE, H5T_NATIVE_INT32,
                               std::int32_t{-12});
        write_serial_attribute(written.get(), "float32", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 0.25f);
    }
    EXPECT_EQ(ResultFile::read_root_attribute(other, "fixed"), AttributeValue(std::string("abc")));
    EXPECT_EQ(ResultFile::read_root_attribute(other, "int32"), AttributeValue(std::int64_t{-12}));
    EXPECT_EQ(ResultFile::read_root_attribute(other, "float32"), AttributeValue(0.25));

    write_text_file(text, "not HDF5\n");
    try {
        ResultFile::read_root_attribute(text, "config_toml");
        ADD_FAILURE() << "read_root_attribute() read a text file";
    } catch (const Error& error) {
        EXPECT_EQ(error.code(), ExitCode::usage);
        EXPECT_EQ(std::string(error.what()), "cannot read '" + text + "': not an HDF5 file");
    }
}

TEST(H5Handle, IsMoveOnlyAndClosesItsId) {
    static_assert(!std::is_copy_constructible_v<H5Dataspace>);
    static_assert(!std::is_copy_assignable_v<H5Dataspace>);
    static_assert(std::is_nothrow_move_constructible_v<H5Dataspace>);
    static_assert(std::is_nothrow_move_assignable_v<H5Dataspace>);
    static_assert(std::is_nothrow_destructible_v<H5Dataspace>);
    hid_t id = H5I_INVALID_HID;
    {
        H5Dataspace space(H5Screate(H5S_SCALAR));
        ASSERT_TRUE(space.valid());
        id = space.get();
        H5Dataspace moved = std::move(space);
        EXPECT_FALSE(space.valid());  // NOLINT(bugprone-use-after-move): moved-from owns nothing
        EXPECT_EQ(moved.get(), id);
        EXPECT_GT(H5Iis_valid(id), 0);
    }
    EXPECT_LE(H5Iis_valid(id), 0);
    H5Dataspace failed(H5I_INVALID_HID);
    EXPECT_FALSE(failed.valid());
    EXPECT_EQ(failed.close(), 0);
}

TEST(Hdf5Version, MatchesTheLibraryHeaders) {
    EXPECT_EQ(hdf5_version(), std::to_string(H5_VERS_MAJOR) + "." + std::to_string(H5_VERS_MINOR) +
                                  "." + std::to_string(H5_VERS_RELEASE));
}

// On ranks other than 0, only failures are printed, each tagged with its rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
  public:
    explicit RankFailurePrinter(int rank) : rank_(rank) {}
    void OnTestPartResult(const ::testing::TestPartResult& result) override {
        if (result.failed()) {
            std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                         result.file_name() != nullptr ? result.file_name() : "?",
                         result.line_number(), result.summary());
        }
    }

  private:
    int rank_;
};

}  // namespace
}  // namespace gpurelay

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    ::testing::InitGoogleTest(&argc, argv);
    const int rank = gpurelay::world_rank();
    if (rank != 0) {
        auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
        listeners.Append(new gpurelay::RankFailurePrinter(rank));
    }
    if (rank == 0 && provided < MPI_THREAD_MULTIPLE) {
        std::fprintf(stderr, "note: MPI provides thread level %d only\n", provided);
    }

    std::string dir;
    if (rank == 0) {
        std::string pattern = (std::filesystem::temp_directory_path() / "gpurelay_rf_XXXXXX");
        if (mkdtemp(pattern.data()) == nullptr) {
            std::perror("mkdtemp");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        dir = pattern;
    }
    gpurelay::scratch_dir() = gpurelay::broadcast_from_rank0(dir);

    const int result = RUN_ALL_TESTS();
    int worst = 0;
    MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        if (worst == 0) {
            std::filesystem::remove_all(gpurelay::scratch_dir());
        } else {
            std::fprintf(stderr, "kept %s for inspection\n", gpurelay::scratch_dir().c_str());
        }
    }
    MPI_Finalize();
    return worst;
}
