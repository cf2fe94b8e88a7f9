#include "mpi/session.hpp"

#include <exception>

#include "mpi/error.hpp"
#include "mpi/wait.hpp"
#include "runtime/error.hpp"

namespace gpurelay {

MpiSession::MpiSession(int* argc, char*** argv) {
    int provided = 0;
    // Not under a Deadline: a watchdog thread made before MPI_Init makes LeakSanitizer's tracer
    // fault at the exit of an MPI singleton (a rank started without mpirun), every time.
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size_));
    if (provided < MPI_THREAD_MULTIPLE) {
        // Stream and proxy threads call MPI concurrently; anything less is unsafe.
        throw runtime_error("this MPI does not provide MPI_THREAD_MULTIPLE, which gpurelay needs");
    }
    // Bounded by timeout_s's default (kDefaultTimeout): the deck is not read yet.
    const Deadline bound("finding the ranks of this node");
    local_rank_ = NodeComm(MPI_COMM_WORLD).rank();
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_CHECK(MPI_Get_processor_name(name, &length));
    host_name_.assign(name, static_cast<std::size_t>(length));
}

MpiSession::~MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized != 0) return;
    // Collective: a peer stopped here (or stuck in its teardown) must not hold this rank.
    const Deadline bound("MPI_Finalize");
    MPI_Finalize();
}

NodeComm::NodeComm(MPI_Comm comm) {
    MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_));
    MPI_CHECK(MPI_Comm_rank(node_, &rank_));
    MPI_CHECK(MPI_Comm_size(node_, &size_));
}

NodeComm::~NodeComm() {
    if (node_ != MPI_COMM_NULL && std::uncaught_exceptions() == 0) MPI_Comm_free(&node_);
}

bool every_pair_on_one_node(MPI_Comm comm, int peer) {
    const Deadline bound("the reduction of whether every pair shares a node");
    int all = rank_in(comm, NodeComm(comm).get(), peer) != MPI_UNDEFINED ? 1 : 0;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm));
    return all == 1;
}

int rank_in(MPI_Comm from, MPI_Comm to, int rank) {
    MPI_Group from_group = MPI_GROUP_NULL, to_group = MPI_GROUP_NULL;
    MPI_CHECK(MPI_Comm_group(from, &from_group));
    MPI_CHECK(MPI_Comm_group(to, &to_group));
    int translated = MPI_UNDEFINED;
    MPI_CHECK(MPI_Group_translate_ranks(from_group, 1, &rank, to_group, &translated));
    MPI_Group_free(&from_group);
    MPI_Group_free(&to_group);
    return translated;
}

std::vector<std::string> allgather_strings(const std::string& mine, int size) {
    constexpr int kWidth = 256;
    std::string record = mine.substr(0, kWidth - 1);
    record.resize(kWidth, '\0');
    std::vector<char> all(static_cast<std::size_t>(kWidth) * static_cast<std::size_t>(size));
    const Deadline bound("gathering the ranks' host and device names");
    MPI_CHECK(MPI_Allgather(record.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR,
                            MPI_COMM_WORLD));
    std::vector<std::string> out;
    for (int r = 0; r < size; ++r) out.emplace_back(all.data() + r * kWidth);
    return out;
}

std::string broadcast_text(MPI_Comm comm, std::string text, const std::string& what) {
    auto length = static_cast<std::uint64_t>(text.size());
    const Deadline bound(what);
    MPI_CHECK(MPI_Bcast(&length, 1, MPI_UINT64_T, 0, comm));
    text.resize(static_cast<std::size_t>(length));
    MPI_CHECK(MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, comm));
    return text;
}

std::string mpi_version_string() {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(text, &length);
    std::string version(text, static_cast<std::size_t>(length));
    // Open MPI appends a build line and a newline; keep the first line.
    const auto end = version.find_first_of(",\n");
    return version.substr(0, end);
}

}  // namespace gpurelay
