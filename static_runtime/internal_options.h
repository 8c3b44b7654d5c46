// The public options (options.h) as the layers below take them: ops/ and memory/ keep their own
// enums, since they cannot see the public API above them.
#pragma once

#include "memory/offset_assignment.h"
#include "ops/core/kernel_options.h"
#include "static_runtime/options.h"

namespace srt {

ops::KernelOptions kernelOptions(const StaticModuleOptions& options);
memory::PlannerAlgorithm plannerAlgorithm(MemoryPlannerAlgorithm algorithm);

} // namespace srt
