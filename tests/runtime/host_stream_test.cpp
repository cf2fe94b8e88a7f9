// The CPU path's streams must behave like CUDA streams: asynchronous, in order, and ordered
// across streams only by events.
#include "runtime/host_stream.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "runtime/error.hpp"

namespace gpurelay {
namespace {

using namespace std::chrono_literals;

// Two streams and an event, whose waits last 100 ms at most; the first stream is held until
// release().
struct HeldStream {
    HeldStream() {
        held.enqueue([this] {
            while (!released) std::this_thread::sleep_for(1ms);
        });
    }
    ~HeldStream() { release(); }
    void release() {
        released = true;
        held.synchronize();
    }

    std::atomic<bool> released{false};
    // Before the streams, so it outlives them: a stream's operation may still be waiting on it
    // when the stream is destroyed (its synchronize gave up first), and the stream's destructor
    // lets that operation end.
    HostEvent event{100ms};
    HostStream held{100ms}, other{100ms};
};

TEST(HostStream, EnqueueReturnsBeforeTheWorkRuns) {
    HostStream stream;
    std::atomic<bool> started{false};
    std::atomic<bool> release{false};
    stream.enqueue([&] {
        started = true;
        while (!release) std::this_thread::sleep_for(1ms);
    });
    std::atomic<int> later{0};
    stream.enqueue([&] { later = 1; });
    EXPECT_EQ(later.load(), 0);  // queued behind the blocked operation
    release = true;
    stream.synchronize();
    EXPECT_TRUE(started);
    EXPECT_EQ(later.load(), 1);
}

TEST(HostStream, RunsInOrder) {
    HostStream stream;
    std::vector<int> seen;
    for (int i = 0; i < 100; ++i) stream.enqueue([&seen, i] { seen.push_back(i); });
    stream.synchronize();
    ASSERT_EQ(seen.size(), 100u);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], i);
}

TEST(HostStream, WaitOrdersAcrossStreams) {
    HostStream producer, consumer;
    HostEvent ready;
    std::atomic<int> value{0};
    producer.enqueue([&] {
        std::this_thread::sleep_for(50ms);
        value = 42;
    });
    ready.record(producer);
    consumer.wait(ready);
    int seen = -1;
    consumer.enqueue([&] { seen = value.load(); });
    consumer.synchronize();
    EXPECT_EQ(seen, 42);
}

TEST(HostStream, WithoutTheWaitTheConsumerRacesAhead) {
    // The control for the test above: the same streams without the wait see the old value, so
    // the host streams really run concurrently and a missing wait shows up.
    HostStream producer, consumer;
    std::atomic<int> value{0};
    std::atomic<bool> release{false};
    producer.enqueue([&] {
        while (!release) std::this_thread::sleep_for(1ms);
        value = 42;
    });
    int seen = -1;
    consumer.enqueue([&] { seen = value.load(); });
    consumer.synchronize();
    release = true;
    producer.synchronize();
    EXPECT_EQ(seen, 0);
}

TEST(HostStream, WaitTargetsTheRecordAtTheTimeOfTheCall) {
    HostStream a, b;
    HostEvent event;
    std::atomic<bool> release{false};
    std::atomic<int> stage{0};
    event.record(a);  // generation 1: reached at once
    b.wait(event);    // waits for generation 1 only
    a.enqueue([&] {
        while (!release) std::this_thread::sleep_for(1ms);
        stage = 1;
    });
    event.record(a);  // generation 2, behind the blocked operation
    int seen = -1;
    b.enqueue([&] { seen = stage.load(); });
    b.synchronize();
    EXPECT_EQ(seen, 0);
    release = true;
    a.synchronize();
}

// Called while the last operation runs (the queue already empty), synchronize returns only once
// it has finished.
TEST(HostStream, SynchronizeWaitsForTheOperationRunning) {
    HostStream stream;
    std::atomic<bool> started{false}, finished{false};
    stream.enqueue([&] {
        started = true;
        std::this_thread::sleep_for(50ms);
        finished = true;
    });
    while (!started) std::this_thread::yield();
    stream.synchronize();
    EXPECT_TRUE(finished);
}

// An event recorded on two streams: the later record, reached first, stays reached when the
// earlier one is reached after it (a wait for the later record must not start again).
TEST(HostEvent, AnEarlierRecordReachedLateLeavesTheLaterOneReached) {
    HeldStream h;
    h.event.record(h.held);   // generation 1, behind the blocked operation
    h.event.record(h.other);  // generation 2, reached at once
    EXPECT_NO_THROW(h.event.synchronize());
    h.release();  // generation 1 reached now
    EXPECT_NO_THROW(h.event.synchronize());
}

TEST(HostStream, UnrecordedEventIsComplete) {
    HostStream stream;
    HostEvent never;
    stream.wait(never);
    bool ran = false;
    stream.enqueue([&] { ran = true; });
    stream.synchronize();
    EXPECT_TRUE(ran);
}

TEST(HostStream, ErrorsSurfaceAtSynchronizeAndSkipLaterWork) {
    HostStream stream;
    bool later = false;
    stream.enqueue([] { throw runtime_error("boom"); });
    stream.enqueue([&] { later = true; });
    try {
        stream.synchronize();
        FAIL() << "no exception";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "boom");
        EXPECT_EQ(e.code(), ExitCode::runtime);
    }
    EXPECT_FALSE(later);
}

TEST(HostEvent, WaitTimesOutWithAClearError) {
    HeldStream h;
    h.event.record(h.held);
    h.other.wait(h.event);
    EXPECT_THROW(h.other.synchronize(), Error);
}

TEST(HostEvent, ElapsedTimeMeasuresTheWorkBetweenRecords) {
    HostStream stream;
    HostEvent start, end;
    start.record(stream);
    stream.enqueue([] { std::this_thread::sleep_for(30ms); });
    end.record(stream);
    end.synchronize();
    const double ms = end.elapsed_ms_since(start);
    EXPECT_GE(ms, 29.0);
    EXPECT_LT(ms, 5000.0);
}

}  // namespace
}  // namespace gpurelay
