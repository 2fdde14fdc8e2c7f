// Names the calling thread (at most 15 characters on Linux) so that top -H, /proc/PID/task and
// the end-to-end benchmark's per-thread CPU figures tell the server's threads apart. Here at the
// bottom of the folder map so that the pipeline's stages and the server's endpoints name theirs
// alike.
#pragma once

#include <pthread.h>

namespace slicestream {

inline void name_this_thread(const char* name) {
  pthread_setname_np(pthread_self(), name);
}

}  // namespace slicestream
