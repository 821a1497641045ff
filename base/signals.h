// Termination signals handled in a normal thread, not in a signal handler.
//
// OnTerminationSignal() blocks SIGINT and SIGTERM in the calling thread (call it before starting other threads so
// they inherit the mask) and starts a detached thread that sigwait()s for them and runs `handler(signo)` there, so
// the handler may take locks, log and talk gRPC. A second signal while the handler runs is delivered again.
#pragma once

#include <functional>

namespace dlio {

void OnTerminationSignal(std::function<void(int signo)> handler);

}  // namespace dlio
