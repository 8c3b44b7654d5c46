// The one include a user of static_runtime needs.
#pragma once

#include "static_runtime/benchmark.h"       // IWYU pragma: export
#include "static_runtime/options.h"         // IWYU pragma: export
#include "static_runtime/runtime.h"         // IWYU pragma: export
#include "static_runtime/runtime_options.h" // IWYU pragma: export
#include "static_runtime/runtime_pool.h"    // IWYU pragma: export
#include "static_runtime/static_method.h"   // IWYU pragma: export
#include "static_runtime/static_module.h"   // IWYU pragma: export
#include "static_runtime/stats.h"           // IWYU pragma: export
#include "static_runtime/tensor_io.h"       // IWYU pragma: export
