#include "common/thread_name.h"

#include <pthread.h>

#include <cstring>

namespace sightline {

void NameThisThread(const char* name) {
  thread_local const char* current = nullptr;
  if (current == name) return;
  current = name;
  char cut[16] = {};
  std::strncpy(cut, name, sizeof(cut) - 1);
  (void)pthread_setname_np(pthread_self(), cut);  // best effort: a name is only for people
}

}  // namespace sightline
