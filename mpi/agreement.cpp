#include "mpi/agreement.hpp"

#include <string>

#include "mpi/wait.hpp"

namespace gpurelay {

void agree(MPI_Comm comm, const std::function<void()>& step) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
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
    int worst = 0;
    MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, comm);
    if (worst == 0) return;
    // The lowest failing rank speaks for everyone.
    int candidate = code != 0 ? rank : size;
    int speaker = size;
    MPI_Allreduce(&candidate, &speaker, 1, MPI_INT, MPI_MIN, comm);
    int length = static_cast<int>(message.size());
    MPI_Bcast(&length, 1, MPI_INT, speaker, comm);
    message.resize(static_cast<std::size_t>(length));
    MPI_Bcast(message.data(), length, MPI_CHAR, speaker, comm);
    int speaker_code = code;
    MPI_Bcast(&speaker_code, 1, MPI_INT, speaker, comm);
    throw AgreedError(static_cast<ExitCode>(speaker_code), message);
}

}  // namespace gpurelay
