#pragma once

namespace sightline {

//! Names the calling thread as `top -H`, `ps -L`, perf and gdb show it
//! (docs/ARCHITECTURE.md, "Threads", lists the names). Linux keeps 15 bytes;
//! a longer name is cut. `name` must outlive the thread (a literal): a thread
//! already given this same pointer is left alone, so a pool's tasks may call
//! it on every run for the cost of one thread-local compare.
void NameThisThread(const char* name);

}  // namespace sightline
