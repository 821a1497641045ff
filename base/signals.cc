#include "base/signals.h"

#include <pthread.h>
#include <signal.h>

#include <thread>

namespace dlio {

void OnTerminationSignal(std::function<void(int)> handler) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set, handler = std::move(handler)] {
    for (;;) {
      int signo = 0;
      if (sigwait(&set, &signo) == 0) handler(signo);
    }
  }).detach();
}

}  // namespace dlio
