// The pipeline's two drivers under mpirun -np 1 (one rank plays both roles) and -np 2: what a pass
// leaves in its PassResult. The host's pass loop and its step timer on the CPU path (host streams,
// the MPI host transport); a pass the device drives itself (launch = "device"), over the ipc
// transport with A in place, on the CPU path's host twins and, where a GPU is visible, on the
// persistent CUDA kernels (skipped, saying so, where none is): every step checked and timed from
// the roles' stamps, a stop that ends every rank after the same step, a resumed pass, and passes
// of two sizes through one pipeline.
#include "pipeline/pipeline.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "mpi/pairing.hpp"
#include "mpi_test.hpp"
#include "pipeline/phase.hpp"
#include "runtime/device.hpp"
#include "transport/transport.hpp"

namespace gpurelay {
namespace {

// Every step's times as the pass kept them (step_record = "auto" keeps each step of a short
// pass).
std::vector<StepTimes> steps_of(const PassResult& r) { return r.recorded.columns().times; }

Config small_config() {
    Config c;
    c.device = DeviceKind::cpu;
    c.elements = 3001;
    c.c_elements = 512;
    c.c_iterations = 8;
    c.steps = 9;
    c.warmup = 2;
    c.depth = 2;
    c.timing = Timing::phases;
    return c;
}

Config device_config(Backend backend) {
    Config c = small_config();
    c.device = backend == Backend::host ? DeviceKind::cpu : DeviceKind::cuda;
    c.transport = "ipc";
    c.ipc_engine = IpcEngine::sm;
    c.launch = Launch::device;
    c.timeout_s = 20;
    return c;
}

// One rank's pipeline, on the CPU path or the GPU: the host's loop over MPI between host buffers,
// a pass the device drives over ipc with A in place.
struct Rig {
    explicit Rig(const Config& c, Backend backend = Backend::host)
        : config(c),
          placement(place_pairs(test::world_rank(), test::world_size(), false)),
          spec(pipeline_spec(config, placement)),
          device(backend == Backend::host ? make_host_device(config.timeout())
                                          : make_cuda_device(0)),
          transport(open_transport(config, placement, *device)),
          pipeline(make_pipeline(spec, *device, *transport, placement.role, MPI_COMM_WORLD)) {}
    static std::unique_ptr<Transport> open_transport(const Config& c, const PairPlacement& p,
                                                     Device& device) {
        TransportOptions o{c.tensor_bytes(), c.chunk, c.timeout()};
        o.slots = static_cast<std::size_t>(c.depth);
        if (c.launch == Launch::host) return make_mpi_host_transport(MPI_COMM_WORLD, p, device, o);
        o.produce_in_place = true;
        return make_ipc_transport(MPI_COMM_WORLD, p, device, o);
    }
    bool producer() const { return placement.role != Role::consumer; }
    bool consumer() const { return placement.role != Role::producer; }

    Config config;
    PairPlacement placement;
    PipelineSpec spec;
    std::unique_ptr<Device> device;
    std::unique_ptr<Transport> transport;
    std::unique_ptr<Pipeline> pipeline;
};

// Phases this rank times (its role's) are measured, the others NaN.
void expect_role_phases(const Rig& rig, const StepTimes& t, std::int64_t s) {
    const auto measured = [&](Phase p) { return !std::isnan(t.*kPhases[index_of(p)].member); };
    for (Phase p : {Phase::a, Phase::send}) {
        EXPECT_EQ(measured(p), rig.producer()) << "step " << s << " " << kPhases[index_of(p)].name;
    }
    for (Phase p : {Phase::recv, Phase::c, Phase::wait, Phase::b}) {
        EXPECT_EQ(measured(p), rig.consumer()) << "step " << s << " " << kPhases[index_of(p)].name;
    }
}

// A whole pass of small_config's 9 steps: the consumer's checks found nothing wrong, in every
// step; the host checked the last tensor (min(4096, elements) samples); the pass was timed, its
// record keeping every step and its histograms the timed ones, 2 to 8 (each one's period, and
// its role's phases).
void expect_checked_and_timed(const Rig& rig, const PassResult& r) {
    EXPECT_EQ(r.x_mismatches, 0u);
    EXPECT_EQ(r.c_mismatches, 0u);
    EXPECT_EQ(r.recorded.columns().steps, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
    EXPECT_EQ(r.phases[index_of(Phase::step)].count(), 7u);
    EXPECT_EQ(r.phases[index_of(Phase::b)].count(), rig.consumer() ? 7u : 0u);
    EXPECT_EQ(r.slowest.slowest().size(), 7u);
    EXPECT_EQ(r.spot_checked, rig.consumer() ? 3001u : 0u);
    EXPECT_EQ(r.spot_mismatches, 0u);
    EXPECT_GT(r.cold_step_ms, 0.0);
    EXPECT_GT(r.timed_wall_ms, 0.0);
    EXPECT_TRUE(r.complete);
}

TEST(PassLoop, AFullPassTimesAndVerifiesEveryStep) {
    for (bool overlap : {false, true}) {
        Rig rig(small_config());
        std::vector<std::int64_t> called;
        const PassResult r = rig.pipeline->run(overlap, nullptr, [&](std::int64_t s) {
            called.push_back(s);
            return AfterStep::go;
        });
        EXPECT_EQ(r.overlap, overlap);
        EXPECT_EQ(r.first_step, 0);
        EXPECT_EQ(r.end_step, 9);
        EXPECT_EQ(r.timed_from, 2);
        EXPECT_EQ(called, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
        ASSERT_EQ(steps_of(r).size(), 9u);
        for (std::int64_t s = 0; s < 9; ++s) {
            const StepTimes t = steps_of(r)[static_cast<std::size_t>(s)];
            expect_role_phases(rig, t, s);
            EXPECT_EQ(std::isnan(t.period), s == 0) << "step " << s;  // no step before step 0
            if (s > 0) EXPECT_GE(t.period, 0.0) << "step " << s;
        }
        expect_checked_and_timed(rig, r);
        EXPECT_EQ(r.phase_timed_steps, 7);
        EXPECT_EQ(r.grouped_steps, 0);  // each step that times its phases records its own end
    }
}

TEST(PassLoop, TheCallbackStopsThePassAfterItsStep) {
    Rig rig(small_config());
    const PassResult r = rig.pipeline->run(
        true, nullptr, [](std::int64_t s) { return s == 4 ? AfterStep::stop : AfterStep::go; });
    EXPECT_EQ(r.end_step, 5);
    EXPECT_FALSE(r.complete);
    for (std::size_t s = 0; s < 9; ++s) {
        // Steps after the stop never ran: no times at all.
        EXPECT_EQ(std::isnan(steps_of(r)[s].b) && std::isnan(steps_of(r)[s].a), s >= 5)
            << "step " << s;
    }
}

TEST(PassLoop, AResumedPassStartsAtItsFirstStepAndTimesFromTheOneAfter) {
    Rig rig(small_config());
    const PassResult r = rig.pipeline->run(true, nullptr, nullptr, 5);
    EXPECT_EQ(r.first_step, 5);
    EXPECT_EQ(r.end_step, 9);
    EXPECT_EQ(r.timed_from, 6);  // step 5 is this pass's cold step
    for (std::size_t s = 0; s < 5; ++s) {
        EXPECT_TRUE(std::isnan(steps_of(r)[s].period) && std::isnan(steps_of(r)[s].a) &&
                    std::isnan(steps_of(r)[s].b))
            << "step " << s;
    }
    EXPECT_TRUE(std::isnan(steps_of(r)[5].period));  // the first step it ran has no previous one
    EXPECT_FALSE(std::isnan(steps_of(r)[6].period));
    EXPECT_EQ(r.x_mismatches, 0u);
}

// The step timer: which steps carry phase times, by the timing the pass uses.
TEST(StepTimer, SampledTimesEveryKthTimedStepAndStepsTimesNone) {
    Config c = small_config();
    c.steps = 12;
    c.timing = Timing::sampled;
    c.timing_every = 3;
    {
        Rig rig(c);
        const PassResult r = rig.pipeline->run(true, nullptr, nullptr);
        EXPECT_EQ(r.timing, Timing::sampled);
        EXPECT_EQ(r.timing_every, 3);
        EXPECT_EQ(r.phase_timed_steps, 4);  // steps 2, 5, 8, 11
        for (std::int64_t s = 2; s < 12; ++s) {
            const StepTimes t = steps_of(r)[static_cast<std::size_t>(s)];
            const bool sampled = (s - 2) % 3 == 0;
            const double phase = rig.consumer() ? t.b : t.a;
            EXPECT_EQ(!std::isnan(phase), sampled) << "step " << s;
            EXPECT_FALSE(std::isnan(t.period)) << "step " << s;  // every step has its period
        }
    }
    c.timing = Timing::steps;
    Rig rig(c);
    const PassResult r = rig.pipeline->run(true, nullptr, nullptr);
    EXPECT_EQ(r.phase_timed_steps, 0);
    for (std::int64_t s = 2; s < 12; ++s) {
        const StepTimes t = steps_of(r)[static_cast<std::size_t>(s)];
        EXPECT_TRUE(std::isnan(t.a) && std::isnan(t.b)) << "step " << s;
        EXPECT_FALSE(std::isnan(t.period)) << "step " << s;
    }
    EXPECT_EQ(r.c_mismatches, 0u);
}

// Sampling starts at the first timed step: no warm-up step times its phases, even where the
// sampling's stride, counted back from there, would land on it (K = 2, warm-up steps 0 and 1).
TEST(StepTimer, SampledTimesNoWarmUpStep) {
    Config c = small_config();
    c.timing = Timing::sampled;
    c.timing_every = 2;
    Rig rig(c);
    const PassResult r = rig.pipeline->run(true, nullptr, nullptr);
    EXPECT_EQ(r.phase_timed_steps, 4);  // steps 2, 4, 6, 8
    for (std::int64_t s = 0; s < 9; ++s) {
        const StepTimes t = steps_of(r)[static_cast<std::size_t>(s)];
        const double phase = rig.consumer() ? t.b : t.a;
        EXPECT_EQ(!std::isnan(phase), s >= 2 && s % 2 == 0) << "step " << s;
    }
}

// Steps that time no phase and are not written share one end event per retire group of up to 4
// steps from a multiple of 4, cut before the timed region: with 12 steps and 2 of warm-up, the
// groups are {0} (the cold step), {1}, {2, 3}, {4..7} and {8..11}, and each step of a group gets
// the group's period over its steps.
TEST(StepTimer, StepsOfARetireGroupShareItsPeriod) {
    Config c = small_config();
    c.steps = 12;
    c.timing = Timing::steps;
    Rig rig(c);
    const PassResult r = rig.pipeline->run(true, nullptr, nullptr);
    EXPECT_EQ(r.retire_group_steps, 4);
    EXPECT_EQ(r.grouped_steps, 10);  // every timed step, 2 to 11
    const auto period = [&](std::size_t s) { return steps_of(r)[s].period; };
    EXPECT_TRUE(std::isnan(period(0)));
    EXPECT_GT(period(1), 0.0);
    EXPECT_EQ(period(2), period(3));
    for (std::size_t s : {5u, 6u, 7u}) EXPECT_EQ(period(s), period(4)) << "step " << s;
    for (std::size_t s : {9u, 10u, 11u}) EXPECT_EQ(period(s), period(8)) << "step " << s;
    EXPECT_GT(period(4), 0.0);
    EXPECT_EQ(r.x_mismatches, 0u);
}

// The first timed group's period is read from where the clock starts, not from the warm-up's last
// step: what lies between (here the last warm-up step's callback, holding the host 200 ms; in a
// run the ceilings and a barrier) is in no step's period. So the timed steps' periods add up to
// at most the timed wall time (the clock starts just before it, and stops after the last step).
TEST(StepTimer, TheFirstTimedStepsAreTimedFromWhereTheClockStarts) {
    Config c = small_config();
    c.steps = 12;
    c.timing = Timing::steps;
    Rig rig(c);
    const PassResult r = rig.pipeline->run(true, nullptr, [](std::int64_t s) {
        if (s == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        return AfterStep::go;
    });
    double periods = 0;
    for (std::size_t s = 2; s < 12; ++s) periods += steps_of(r)[s].period;
    EXPECT_GT(periods, 0.0);
    EXPECT_LT(periods, r.timed_wall_ms + 100.0) << "the hold before the clock started was timed";
}

// A stop inside a retire group ends it there: its steps' counts are read, but they get no
// period (its end event is recorded when the host stops, not when they ran).
TEST(StepTimer, AStopInsideARetireGroupLeavesItsStepsWithoutAPeriod) {
    Config c = small_config();
    c.steps = 12;
    c.timing = Timing::steps;
    Rig rig(c);
    const PassResult r = rig.pipeline->run(
        true, nullptr, [](std::int64_t s) { return s == 6 ? AfterStep::stop : AfterStep::go; });
    EXPECT_EQ(r.end_step, 7);
    EXPECT_EQ(steps_of(r)[2].period, steps_of(r)[3].period);
    EXPECT_GT(steps_of(r)[3].period, 0.0);
    for (std::size_t s : {4u, 5u, 6u})
        EXPECT_TRUE(std::isnan(steps_of(r)[s].period)) << "step " << s;
    EXPECT_EQ(r.grouped_steps, 5);  // {2, 3} and the cut group {4, 5, 6}
    // The pipeline runs a second pass as it ran the first: the cut group left nothing behind.
    const PassResult again = rig.pipeline->run(true, nullptr, nullptr);
    EXPECT_EQ(again.end_step, 12);
    EXPECT_EQ(steps_of(again)[4].period, steps_of(again)[7].period);
    EXPECT_EQ(again.x_mismatches, 0u);
}

TEST(PassLoop, MemoryIsTheSlotsOfTheRanksRoles) {
    Rig rig(small_config());
    const std::uint64_t tensor = rig.config.tensor_bytes();
    const std::uint64_t slots = 2 * tensor;  // depth 2
    // Producers: A's send slots; consumers: receive and result slots and C's buffer.
    const std::uint64_t expected =
        (rig.producer() ? slots : 0) + (rig.consumer() ? 2 * slots + 512 * 4 : 0);
    const MemoryPlan plan = plan_memory(rig.spec, rig.placement.role, true);
    EXPECT_GE(plan.device_bytes(), expected);
    EXPECT_LT(plan.device_bytes(), expected + 4096);  // and little besides
    // A relay's middle stage: its outgoing slots (none when B writes the next stage's in place)
    // and its receive slots, no y of its own.
    EXPECT_EQ(plan_memory(rig.spec, Role::relay, true).slots, 4u);
    EXPECT_EQ(plan_memory(rig.spec, Role::relay, false).slots, 2u);
}

// --- A pass the device drives ---------------------------------------------------------------

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
        const PassResult r = rig.pipeline->run(overlap, nullptr, [&](std::int64_t s) {
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
        expect_checked_and_timed(rig, r);
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
    const PassResult r = rig.pipeline->run(true, nullptr, [&](std::int64_t s) {
        last_voted = s;
        return s == 4 ? AfterStep::stop : AfterStep::go;
    });
    // The roles stop a few steps after the vote, at the step the producer read the stop word
    // before: the same on every rank, at least the voted step's next.
    EXPECT_EQ(last_voted, 4);
    const auto [least, most] = across_ranks(r.end_step);
    EXPECT_EQ(least, most);
    EXPECT_GE(r.end_step, 5);
    // Whether it ran every step, which a stop this early leaves it far from.
    EXPECT_EQ(r.complete, r.end_step == 200);
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
    const PassResult resumed = rig.pipeline->run(true, nullptr, nullptr, 5);
    EXPECT_EQ(resumed.first_step, 5);
    EXPECT_EQ(resumed.end_step, 9);
    EXPECT_EQ(resumed.timed_from, 6);
    EXPECT_TRUE(std::isnan(steps_of(resumed)[4].period) && std::isnan(steps_of(resumed)[5].period));
    EXPECT_FALSE(std::isnan(steps_of(resumed)[6].period));
    // Then whole passes of a smaller size and of the first again, through the same slots: each
    // counts on from the slots' uses so far.
    for (const std::uint64_t elements : {777u, 20000u}) {
        rig.pipeline->resize(elements);
        const PassResult r = rig.pipeline->run(false, nullptr, nullptr);
        EXPECT_EQ(r.end_step, 9);
        EXPECT_EQ(r.x_mismatches, 0u) << elements;
        EXPECT_EQ(r.spot_mismatches, 0u);
        EXPECT_EQ(r.spot_checked, rig.consumer() ? std::min<std::uint64_t>(elements, 4096) : 0u);
    }
    // No ceilings: they are the host-launched phases'.
    EXPECT_EQ(rig.pipeline->ceilings().end_step, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, DevicePassTest, ::testing::Values(Backend::host, Backend::cuda),
                         [](const auto& info) {
                             return std::string(info.param == Backend::host ? "host" : "cuda");
                         });

}  // namespace
}  // namespace gpurelay
