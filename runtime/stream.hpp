// Streams and events used alike on the CPU and the GPU. A call only queues work; an event records a
// point in a stream's queue; a wait makes a stream (not the host) hold until that point is reached.
#pragma once

#include <memory>
#include <string>

namespace gpurelay {

enum class Backend { host, cuda };

// Ordering events cost nothing to record; timing events also give elapsed times.
enum class EventUse { ordering, timing };

class Event;

class Stream {
  public:
    virtual ~Stream() = default;
    virtual Backend backend() const = 0;
    // Later work on this stream waits until `event`'s latest record (at the time of this call) is
    // reached. Like cudaStreamWaitEvent: an event never recorded is already complete.
    virtual void wait(Event& event) = 0;
    // The host blocks until everything queued so far has finished.
    virtual void synchronize() = 0;
};

class Event {
  public:
    virtual ~Event() = default;
    // Marks the current end of `stream`'s queue.
    virtual void record(Stream& stream) = 0;
    // The host blocks until the latest record is reached.
    virtual void synchronize() = 0;
    // Milliseconds from `start` to this event; both must be timing events and complete.
    virtual double elapsed_ms_since(Event& start) = 0;
};

}  // namespace gpurelay
