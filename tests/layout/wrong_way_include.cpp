// Built only by the layout test, which expects it to fail: pipeline/ sits below report/, so a
// target that links gpurelay_pipeline must not see report/'s headers.
#include "pipeline/pipeline.hpp"
#include "report/reduce.hpp"
