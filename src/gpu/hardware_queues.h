// How many hardware work queues CUDA gives a context's streams:
// CUDA_DEVICE_MAX_CONNECTIONS, read when the context is made (1 to 32,
// default 8). Streams past that many share a queue, and a queue runs its
// commands in order: a stream that waits for a flag holds back every other
// stream on its queue. A stream-ordered call over the cuda transport parks
// the caller's stream until the channels' streams are done, so where those
// share a queue neither moves (Megatron-LM sets the variable to 1).
#pragma once

namespace strata::gpu {

// The queues a setting gives: `setting` is the variable's text, or null
// where it is unset; a whole number from 1 on (past 32, 32), else CUDA's
// default.
int hardwareQueues(const char* setting);
// This process's, from its environment.
int hardwareQueues();

}  // namespace strata::gpu
