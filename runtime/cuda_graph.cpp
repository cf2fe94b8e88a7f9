#include <utility>

#include "runtime/cuda_stream.hpp"
#include "runtime/error.hpp"

namespace gpurelay {
namespace {

class CudaGraph final : public Graph {
  public:
    explicit CudaGraph(cudaGraph_t graph) {
        // The executable graph keeps what it needs (NCCL's resources too): the graph can go.
        const cudaError_t status = cudaGraphInstantiate(&exec_, graph, 0);
        cudaGraphDestroy(graph);
        CUDA_CHECK(status);
    }
    ~CudaGraph() override {
        if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    }
    CudaGraph(const CudaGraph&) = delete;
    CudaGraph& operator=(const CudaGraph&) = delete;

    void launch(Stream& stream) override {
        CUDA_CHECK(cudaGraphLaunch(exec_, cuda_handle(stream)));
    }

  private:
    cudaGraphExec_t exec_ = nullptr;
};

// An ordering event that lives as long as the capture: it only forks and joins the streams.
class ForkEvent {
  public:
    ForkEvent() { CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
    ~ForkEvent() {
        if (event_ != nullptr) cudaEventDestroy(event_);
    }
    ForkEvent(ForkEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
    ForkEvent(const ForkEvent&) = delete;
    ForkEvent& operator=(const ForkEvent&) = delete;
    cudaEvent_t handle() const { return event_; }

  private:
    cudaEvent_t event_ = nullptr;
};

class CudaGraphCapture final : public GraphCapture {
  public:
    CudaGraphCapture(CudaStream& origin, std::vector<CudaStream*> joined)
        : origin_(origin), joined_(std::move(joined)), joins_(joined_.size()) {
        CUDA_CHECK(cudaStreamBeginCapture(origin_.handle(), cudaStreamCaptureModeThreadLocal));
        origin_.set_capturing(true);
        if (joined_.empty()) return;
        // A plain record and wait inside a capture are an edge of the graph: each joined stream
        // now captures into the same graph, its work depending on nothing captured before it.
        CUDA_CHECK(cudaEventRecord(fork_.handle(), origin_.handle()));
        for (CudaStream* stream : joined_) {
            CUDA_CHECK(cudaStreamWaitEvent(stream->handle(), fork_.handle(), 0));
            stream->set_capturing(true);
        }
    }
    // A capture abandoned by an exception is ended and its graph dropped; nothing throws here.
    ~CudaGraphCapture() override {
        if (finished_) return;
        join(false);
        cudaGraph_t graph = nullptr;
        cudaStreamEndCapture(origin_.handle(), &graph);
        if (graph != nullptr) cudaGraphDestroy(graph);
        origin_.set_capturing(false);
        cudaGetLastError();
    }
    CudaGraphCapture(const CudaGraphCapture&) = delete;
    CudaGraphCapture& operator=(const CudaGraphCapture&) = delete;

    std::unique_ptr<Graph> finish() override {
        // A capture ends only once every stream forked into it has joined back.
        join(true);
        finished_ = true;
        origin_.set_capturing(false);
        cudaGraph_t graph = nullptr;
        CUDA_CHECK(cudaStreamEndCapture(origin_.handle(), &graph));
        return std::make_unique<CudaGraph>(graph);
    }

  private:
    void join(bool check) {
        for (std::size_t i = 0; i < joined_.size(); ++i) {
            const cudaError_t recorded = cudaEventRecord(joins_[i].handle(), joined_[i]->handle());
            const cudaError_t waited = cudaStreamWaitEvent(origin_.handle(), joins_[i].handle(), 0);
            joined_[i]->set_capturing(false);
            if (check) {
                CUDA_CHECK(recorded);
                CUDA_CHECK(waited);
            }
        }
    }

    CudaStream& origin_;
    std::vector<CudaStream*> joined_;
    // Made before the capture starts: nothing but stream work happens while it records.
    ForkEvent fork_;
    std::vector<ForkEvent> joins_;
    bool finished_ = false;
};

}  // namespace

std::unique_ptr<GraphCapture> begin_cuda_capture(CudaStream& origin,
                                                 std::vector<CudaStream*> joined) {
    return std::make_unique<CudaGraphCapture>(origin, std::move(joined));
}

}  // namespace gpurelay
