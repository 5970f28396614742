#include "stop_signal.h"

#include <csignal>

namespace larc::cli {

namespace {
volatile std::sig_atomic_t g_received = 0;
struct sigaction g_previous_int, g_previous_term;

extern "C" void note_signal(int signal) { g_received = signal; }
}  // namespace

StopOnSignal::StopOnSignal() {
  g_received = 0;
  struct sigaction action {};
  action.sa_handler = note_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESETHAND: the second signal takes the default action (the process ends); SA_RESTART: system
  // calls under way (a write of a report) resume instead of failing with EINTR.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
}

StopOnSignal::~StopOnSignal() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

int StopOnSignal::received() { return g_received; }

const char* StopOnSignal::name(int signal) { return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "a signal"; }

}  // namespace larc::cli
