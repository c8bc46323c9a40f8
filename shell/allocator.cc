// The gpulse program's allocator settings. The program is linked with
// jemalloc (CMakeLists.txt says why), which reads this global at start:
//  - background_thread: a thread of jemalloc's returns freed memory to the
//    system while the server is idle, not only at its next allocation;
//  - dirty_decay_ms 1000, muzzy_decay_ms 0: memory freed by a large query
//    goes back within about a second (the default, 10 s, held a
//    100,000-GPU snapshot's 1.9 GB for as long).
// MALLOC_CONF in the environment still overrides these for a run.

extern "C" {
// The name and type are jemalloc's (jemalloc.h declares it the same way).
extern const char* malloc_conf;
const char* malloc_conf = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0";
}
