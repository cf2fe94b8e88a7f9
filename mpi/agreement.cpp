#include "mpi/agreement.hpp"

#include <string>

#include "mpi/wait.hpp"

namespace gpurelay {

void agree(MPI_Comm comm, const std::function<void()>& step) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    int code = 0;
    std::string message;
    try {
        step();
    } catch (const Error& e) {
        code = static_cast<int>(e.code());
        message = e.what();
    } catch (const std::exception& e) {
        code = static_cast<int>(ExitCode::runtime);
        message = e.what();
    }
    // A rank that stopped answering must not hold the others here.
    const Deadline bound("the ranks' agreement on a step's outcome");
    // The lowest failing rank speaks for everyone: MINLOC over (passed, rank) keeps the least rank
    // of equal values.
    int mine[2] = {code == 0 ? 1 : 0, rank}, first[2] = {1, 0};
    MPI_Allreduce(mine, first, 1, MPI_2INT, MPI_MINLOC, comm);
    if (first[0] == 1) return;
    int said[2] = {code, static_cast<int>(message.size())};
    MPI_Bcast(said, 2, MPI_INT, first[1], comm);
    message.resize(static_cast<std::size_t>(said[1]));
    MPI_Bcast(message.data(), said[1], MPI_CHAR, first[1], comm);
    throw AgreedError(static_cast<ExitCode>(said[0]), message);
}

}  // namespace gpurelay
