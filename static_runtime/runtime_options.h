// RuntimeOptions: arguments of one runtime instance, known only where it runs (not when the
// module is built), passed explicitly when a runtime or pool is created and changeable between
// runs. Never global, never thread-local.
#pragma once

namespace srt {

struct RuntimeOptions {
  // Intra-op threads (ATen parallel loops, oneDNN, OpenBLAS) while this runtime runs, set on the
  // calling thread for the duration of the run and restored after. 0 keeps the caller's setting.
  int intra_op_threads = 0;

  // Throws c10::Error naming the bad field.
  void validate() const;
};

} // namespace srt
