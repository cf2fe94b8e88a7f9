// The background writer of /y under mpirun -np 1 and 2: rows handed over through its staging
// buffers reach the file whole, in their rows, checked on the host as they go, with the counts
// in samples; the pipeline blocks only when every buffer is taken.
#include "io/result_writer.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "io/result_file.hpp"
#include "mpi_test.hpp"
#include "runtime/device.hpp"

namespace gpurelay {
namespace {

constexpr std::uint64_t kElements = 100;
constexpr std::int64_t kRows = 6;

// A fresh folder shared by every rank.
std::string shared_scratch_dir() {
    std::string dir(256, '\0');
    if (test::world_rank() == 0) {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "gpurelay_writer_XXXXXX").string();
        if (mkdtemp(pattern.data()) == nullptr) MPI_Abort(MPI_COMM_WORLD, 1);
        dir.replace(0, pattern.size(), pattern);
    }
    MPI_Bcast(dir.data(), static_cast<int>(dir.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
    return dir.c_str();
}

// Element i of the row for step s of pair p.
double value(std::uint64_t p, std::int64_t s, std::uint64_t i) {
    return static_cast<double>(p) * 1000.0 + static_cast<double>(s) * 10.0 +
           static_cast<double>(i) * 0.001;
}

ResultFileLayout layout() {
    ResultFileLayout l;
    l.pairs = static_cast<std::uint64_t>(test::world_size());
    for (std::int64_t s = 0; s < kRows; ++s) l.written_steps.push_back(2 * s);  // steps 0, 2, ..
    l.elements = kElements;
    l.y_type = ElementType::float64;
    return l;
}

// The `count` doubles of dataset `name` in the closed file at `path` (rank 0), or none.
std::vector<double> read_doubles(const std::string& path, const char* name, std::size_t count) {
    std::vector<double> values(count);
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return {};
    const hid_t y = H5Dopen2(f, name, H5P_DEFAULT);
    const bool read =
        y >= 0 && H5Dread(y, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0;
    if (y >= 0) H5Dclose(y);
    H5Fclose(f);
    return read ? values : std::vector<double>{};
}

TEST(ResultWriter, RowsReachTheFileCheckedAndCountedInSamples) {
    const std::string path = shared_scratch_dir() + "/rows.h5";
    const auto pair = static_cast<std::uint64_t>(test::world_rank());
    auto device = make_host_device(std::chrono::seconds(30));
    auto stream = device->make_stream(false, "io");
    ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, false, layout(), {});
    std::atomic<int> checks{0};
    {
        // The check samples 10 elements and calls the row wrong when its first value is not
        // that of its step: step 4's row is made wrong below.
        ResultWriter writer(
            *device, file, pair, kElements * sizeof(double), 2,
            [&](const void* row, std::int64_t step) {
                ++checks;
                const auto* y = static_cast<const double*>(row);
                return ResultWriter::RowCheckResult{10, y[0] == value(pair, step, 0) ? 0u : 1u};
            });
        for (std::int64_t r = 0; r < kRows; ++r) {
            const std::int64_t step = 2 * r;
            const ResultWriter::Slot slot = writer.acquire();
            // Filled in stream order, as the io stream's copy would.
            device->enqueue_host(
                [slot, step, pair] {
                    auto* y = static_cast<double*>(slot.host);
                    for (std::uint64_t i = 0; i < kElements; ++i) y[i] = value(pair, step, i);
                    if (step == 4) y[0] = -1.0;
                },
                *stream);
            slot.ready->record(*stream);
            writer.submit(slot, static_cast<std::uint64_t>(r), step);
        }
        writer.drain();
        EXPECT_EQ(checks.load(), kRows);
        EXPECT_EQ(writer.checked(), 10u * kRows);  // samples, not rows
        EXPECT_EQ(writer.mismatches(), 1u);
        EXPECT_EQ(writer.bytes_written(), kRows * kElements * sizeof(double));
        EXPECT_GE(writer.write_seconds(), 0.0);
    }
    file.close(true, {});
    if (test::world_rank() != 0) return;
    const std::vector<double> all =
        read_doubles(path, "/y", static_cast<std::size_t>(test::world_size()) * kRows * kElements);
    std::size_t wrong = 0;
    for (std::uint64_t p = 0; p < static_cast<std::uint64_t>(test::world_size()); ++p) {
        for (std::int64_t r = 0; r < kRows; ++r) {
            for (std::uint64_t i = 0; i < kElements; ++i) {
                const double got = all[(p * kRows + static_cast<std::uint64_t>(r)) * kElements + i];
                const double want = (r == 2 && i == 0) ? -1.0 : value(p, 2 * r, i);
                wrong += got != want;
            }
        }
    }
    EXPECT_EQ(wrong, 0u);  // every row in its place, the wrong one written as it was
}

TEST(ResultWriter, AcquireBlocksOnlyWhileEveryBufferIsTaken) {
    const std::string path = shared_scratch_dir() + "/blocking.h5";
    auto device = make_host_device(std::chrono::seconds(30));
    auto stream = device->make_stream(false, "io");
    ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, false, layout(), {});
    {
        ResultWriter writer(*device, file, static_cast<std::uint64_t>(test::world_rank()),
                            kElements * sizeof(double), 2, nullptr);
        const ResultWriter::Slot first = writer.acquire();
        const ResultWriter::Slot second = writer.acquire();
        EXPECT_NE(first.index, second.index);
        EXPECT_EQ(writer.waited_ms(), 0.0);
        // Both taken: a third acquire waits until the first row is written. Its data become
        // ready only 100 ms from now.
        device->enqueue_host([] { std::this_thread::sleep_for(std::chrono::milliseconds(100)); },
                             *stream);
        first.ready->record(*stream);
        writer.submit(first, 0, 0);
        const ResultWriter::Slot third = writer.acquire();
        EXPECT_EQ(third.index, first.index);
        EXPECT_GE(writer.waited_ms(), 50.0);
        second.ready->record(*stream);
        writer.submit(second, 1, 2);
        third.ready->record(*stream);
        writer.submit(third, 2, 4);
        writer.drain();
        EXPECT_EQ(writer.checked(), 0u);  // no check given
        EXPECT_EQ(writer.bytes_written(), 3 * kElements * sizeof(double));
    }
    file.close(true, {});
}

// A run of several sizes switches the writer to the next size's /y between them: the rows still
// in flight (their data ready only 100 ms after the switch is asked for) reach the first size's
// /y whole, the rows after it the second's, and each row counts its own bytes.
TEST(ResultWriter, ASwitchOfRowsWaitsForTheRowsInFlight) {
    constexpr std::uint64_t kShorter = 60;
    const std::string path = shared_scratch_dir() + "/sizes.h5";
    const auto pair = static_cast<std::uint64_t>(test::world_rank());
    auto device = make_host_device(std::chrono::seconds(30));
    auto stream = device->make_stream(false, "io");
    ResultFileLayout sizes = layout();
    sizes.written_steps = {0, 2};
    sizes.row_sets = {{"/cases/0", kElements}, {"/cases/1", kShorter}};
    ResultFile file = ResultFile::create(MPI_COMM_WORLD, path, false, sizes, {});
    {
        ResultWriter writer(*device, file, pair, kElements * sizeof(double), 2, nullptr);
        device->enqueue_host([] { std::this_thread::sleep_for(std::chrono::milliseconds(100)); },
                             *stream);
        for (std::size_t set = 0; set < 2; ++set) {
            const std::uint64_t length = set == 0 ? kElements : kShorter;
            if (set == 1) writer.switch_rows(1, kShorter * sizeof(double), nullptr);
            for (std::int64_t r = 0; r < 2; ++r) {
                const ResultWriter::Slot slot = writer.acquire();
                device->enqueue_host(
                    [slot, set, r, pair, length] {
                        auto* y = static_cast<double*>(slot.host);
                        for (std::uint64_t i = 0; i < length; ++i) {
                            y[i] = value(pair, 2 * r, i) + 100000.0 * static_cast<double>(set);
                        }
                    },
                    *stream);
                slot.ready->record(*stream);
                writer.submit(slot, static_cast<std::uint64_t>(r), 2 * r);
            }
        }
        writer.drain();
        EXPECT_EQ(writer.bytes_written(), 2 * (kElements + kShorter) * sizeof(double));
    }
    file.close(true, {});
    if (test::world_rank() != 0) return;
    const auto pairs = static_cast<std::uint64_t>(test::world_size());
    for (std::size_t set = 0; set < 2; ++set) {
        const std::uint64_t length = set == 0 ? kElements : kShorter;
        const std::vector<double> all =
            read_doubles(path, set == 0 ? "/cases/0/y" : "/cases/1/y", pairs * 2 * length);
        ASSERT_EQ(all.size(), pairs * 2 * length) << "set " << set;
        std::size_t wrong = 0;
        for (std::uint64_t p = 0; p < pairs; ++p) {
            for (std::uint64_t r = 0; r < 2; ++r) {
                for (std::uint64_t i = 0; i < length; ++i) {
                    const double want = value(p, 2 * static_cast<std::int64_t>(r), i) +
                                        100000.0 * static_cast<double>(set);
                    wrong += all[(p * 2 + r) * length + i] != want;
                }
            }
        }
        EXPECT_EQ(wrong, 0u) << "set " << set;
    }
}

}  // namespace
}  // namespace gpurelay
