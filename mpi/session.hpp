// The MPI session of one process: initialised with thread support (stream threads call MPI),
// finalised on scope exit, and where each rank sits on its node.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace gpurelay {

class MpiSession {
  public:
    // MPI_THREAD_MULTIPLE (throws if missing); MPI errors return codes (MPI_CHECK throws them).
    MpiSession(int* argc, char*** argv);
    ~MpiSession();
    MpiSession(const MpiSession&) = delete;
    MpiSession& operator=(const MpiSession&) = delete;

    int world_rank() const { return world_rank_; }
    int world_size() const { return world_size_; }
    int local_rank() const { return local_rank_; }
    const std::string& host_name() const { return host_name_; }

  private:
    int world_rank_ = 0;
    int world_size_ = 1;
    int local_rank_ = 0;
    std::string host_name_;
};

// The ranks of `comm` on this node, for one scope; collective (callers bound it with a Deadline).
// Not freed while an exception unwinds it (a peer may be gone; an MPI error ends the rank anyway).
class NodeComm {
  public:
    explicit NodeComm(MPI_Comm comm);
    ~NodeComm();
    NodeComm(const NodeComm&) = delete;
    NodeComm& operator=(const NodeComm&) = delete;
    MPI_Comm get() const { return node_; }
    int rank() const { return rank_; }
    int size() const { return size_; }

  private:
    MPI_Comm node_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1;
};

// Rank `rank` of communicator `from` in communicator `to`, or MPI_UNDEFINED.
int rank_in(MPI_Comm from, MPI_Comm to, int rank);

// Collective: whether world rank `peer` shares this node (as ipc needs it); false on every rank
// when any pair of the job is split across nodes.
bool every_pair_on_one_node(MPI_Comm comm, int peer);

// Collective over MPI_COMM_WORLD: one string per rank (at most 255 characters), in rank order.
std::vector<std::string> allgather_strings(const std::string& mine, int size);
// Collective over `comm`: rank 0's `text` (of any length) on every rank, the wait named `what`.
std::string broadcast_text(MPI_Comm comm, std::string text, const std::string& what);

// "Open MPI v4.1.4" and the like.
std::string mpi_version_string();

}  // namespace gpurelay
