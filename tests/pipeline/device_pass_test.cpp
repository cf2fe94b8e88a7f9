// A pass the device drives itself (launch = "device") under mpirun -np 1 (one rank, both roles)
// and -np 2, over the ipc transport with A in place: on the CPU path's host twins, and where a
// GPU is visible on the persistent CUDA kernels (skipped, saying so, where none is). What the pass
// leaves in its PassResult: every step checked and timed from the roles' stamps, a stop that ends
// every rank after the same step, a resumed pass, and passes of two sizes through one pipeline.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "mpi/pairing.hpp"
#include "mpi_test.hpp"
#include "pipeline/phase.hpp"
#include "pipeline/pipeline.hpp"
#include "runtime/device.hpp"
#include "transport/transport.hpp"

namespace gpurelay {
namespace {

// Every step's times as the pass kept them (step_record = "auto" keeps each step of a short
// pass).
std::vector<StepTimes> steps_of(const PassResult& r) { return r.recorded.columns().times; }

Config device_config(Backend backend) {
    Config c;
    c.device = backend == Backend::host ? DeviceKind::cpu : DeviceKind::cuda;
    c.transport = "ipc";
    c.ipc_engine = IpcEngine::sm;
    c.launch = Launch::device;
    c.elements = 3001;
    c.c_elements = 512;
    c.c_iterations = 8;
    c.steps = 9;
    c.warmup = 2;
    c.depth = 2;
    c.timeout_s = 20;
    return c;
}

// One rank's pipeline, on the CPU path or the GPU.
struct Rig {
    Rig(const Config& c, Backend backend)
        : config(c),
          placement(place_pairs(test::world_rank(), test::world_size(), false)),
          spec(pipeline_spec(config, placement)),
          device(backend == Backend::host ? make_host_device(config.timeout())
                                          : make_cuda_device(0)),
          transport(make_ipc_transport(MPI_COMM_WORLD, placement, *device, options(config))),
          pipeline(spec, *device, *transport, placement.role, MPI_COMM_WORLD) {}
    static TransportOptions options(const Config& c) {
        TransportOptions o{c.tensor_bytes(), c.chunk, c.timeout()};
        o.slots = static_cast<std::size_t>(c.depth);
        o.produce_in_place = true;
        return o;
    }
    bool producer() const { return placement.role != Role::consumer; }
    bool consumer() const { return placement.role != Role::producer; }

    Config config;
    PairPlacement placement;
    PipelineSpec spec;
    std::unique_ptr<Device> device;
    std::unique_ptr<Transport> transport;
    Pipeline pipeline;
};

// The same on every rank: the smallest and the largest of `value`.
std::pair<std::int64_t, std::int64_t> across_ranks(std::int64_t value) {
    std::int64_t least = value, most = value;
    MPI_Allreduce(MPI_IN_PLACE, &least, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    return {least, most};
}

class DevicePassTest : public ::testing::TestWithParam<Backend> {
  protected:
    void SetUp() override {
        if (GetParam() == Backend::cuda && cuda_device_count() == 0) {
            GTEST_SKIP() << (cuda_built() ? "no GPU visible" : "built without CUDA")
                         << ": the persistent CUDA kernels' passes run where one is";
        }
    }
};

TEST_P(DevicePassTest, EveryStepIsCheckedAndTimedFromTheStamps) {
    for (const bool overlap : {false, true}) {
        Rig rig(device_config(GetParam()), GetParam());
        std::vector<std::int64_t> voted;
        const PassResult r = rig.pipeline.run(overlap, nullptr, [&](std::int64_t s) {
            voted.push_back(s);
            return AfterStep::go;
        });
        EXPECT_EQ(r.end_step, 9);
        EXPECT_EQ(r.timed_from, 2);
        // The vote is asked after every step, in order, as the host-launched pass asks it.
        EXPECT_EQ(voted, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
        for (std::size_t s = 0; s < 9; ++s) {
            const StepTimes t = steps_of(r)[s];
            EXPECT_EQ(!std::isnan(t.a) && !std::isnan(t.send), rig.producer()) << "step " << s;
            EXPECT_EQ(!std::isnan(t.wait) && !std::isnan(t.b) && !std::isnan(t.c), rig.consumer())
                << "step " << s;
            EXPECT_TRUE(std::isnan(t.recv));  // the receive is only a wait
            EXPECT_EQ(std::isnan(t.period), s == 0) << "step " << s;
            if (s > 0) EXPECT_GT(t.period, 0.0) << "step " << s;
            if (rig.producer()) EXPECT_GE(t.a, 0.0);
            if (rig.consumer()) EXPECT_GE(t.wait, 0.0);
        }
        EXPECT_EQ(r.x_mismatches, 0u);
        EXPECT_EQ(r.c_mismatches, 0u);
        EXPECT_EQ(r.spot_checked, rig.consumer() ? 3001u : 0u);
        EXPECT_EQ(r.spot_mismatches, 0u);
        EXPECT_GT(r.cold_step_ms, 0.0);
        EXPECT_GT(r.timed_wall_ms, 0.0);
        // The timed wall is the timed steps' periods, end to end.
        double periods = 0;
        for (std::size_t s = 2; s < 9; ++s) periods += steps_of(r)[s].period;
        EXPECT_NEAR(r.timed_wall_ms, periods, 1e-6);
        EXPECT_EQ(r.phase_timed_steps, 7);
        EXPECT_EQ(r.timing, Timing::phases);
    }
}

TEST_P(DevicePassTest, AStopEndsEveryRankAfterTheSameStep) {
    Config c = device_config(GetParam());
    c.steps = 200;
    Rig rig(c, GetParam());
    std::int64_t last_voted = -1;
    const PassResult r = rig.pipeline.run(true, nullptr, [&](std::int64_t s) {
        last_voted = s;
        return s == 4 ? AfterStep::stop : AfterStep::go;
    });
    // The roles stop a few steps after the vote, at the step the producer read the stop word
    // before: the same on every rank, at least the voted step's next.
    EXPECT_EQ(last_voted, 4);
    const auto [least, most] = across_ranks(r.end_step);
    EXPECT_EQ(least, most);
    EXPECT_GE(r.end_step, 5);
    for (std::int64_t s = 0; s < 200; ++s) {
        const StepTimes t = steps_of(r)[static_cast<std::size_t>(s)];
        const double phase = rig.consumer() ? t.b : t.a;
        EXPECT_EQ(std::isnan(phase), s >= r.end_step) << "step " << s;
    }
    EXPECT_EQ(r.x_mismatches, 0u);
}

TEST_P(DevicePassTest, PassesCountOnAcrossResumesAndSizes) {
    Config c = device_config(GetParam());
    c.elements = 20000;
    Rig rig(c, GetParam());
    // A resumed pass: its first step is cold, the timings start at the one after.
    const PassResult resumed = rig.pipeline.run(true, nullptr, nullptr, 5);
    EXPECT_EQ(resumed.first_step, 5);
    EXPECT_EQ(resumed.end_step, 9);
    EXPECT_EQ(resumed.timed_from, 6);
    EXPECT_TRUE(std::isnan(steps_of(resumed)[4].period) && std::isnan(steps_of(resumed)[5].period));
    EXPECT_FALSE(std::isnan(steps_of(resumed)[6].period));
    // Then whole passes of a smaller size and of the first again, through the same slots: each
    // counts on from the slots' uses so far.
    for (const std::uint64_t elements : {777u, 20000u}) {
        rig.pipeline.resize(elements);
        const PassResult r = rig.pipeline.run(false, nullptr, nullptr);
        EXPECT_EQ(r.end_step, 9);
        EXPECT_EQ(r.x_mismatches, 0u) << elements;
        EXPECT_EQ(r.spot_mismatches, 0u);
        EXPECT_EQ(r.spot_checked, rig.consumer() ? std::min<std::uint64_t>(elements, 4096) : 0u);
    }
    // No ceilings: they are the host-launched phases'.
    EXPECT_EQ(rig.pipeline.ceilings().end_step, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, DevicePassTest, ::testing::Values(Backend::host, Backend::cuda),
                         [](const auto& info) {
                             return std::string(info.param == Backend::host ? "host" : "cuda");
                         });

}  // namespace
}  // namespace gpurelay
