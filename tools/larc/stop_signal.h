// SIGINT and SIGTERM as a request to stop a long run (`larc fuzz`): while a StopOnSignal lives, the
// first such signal only sets a flag the run polls between cases, so the run ends by writing what it
// finished; the handler is then reset, so a second signal ends the process at once.
#pragma once

namespace larc::cli {

class StopOnSignal {
 public:
  StopOnSignal();   // installs the handlers
  ~StopOnSignal();  // restores the previous ones
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

  // The signal received (SIGINT or SIGTERM), 0 while none.
  static int received();
  // "SIGINT", "SIGTERM".
  static const char* name(int signal);
};

}  // namespace larc::cli
