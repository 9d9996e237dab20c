// The C library's timerfd (and adjtimex, with which tests set the clock), which Swift's Glibc module does not export.
#ifndef REACHD_CREACHDTIME_SHIM_H
#define REACHD_CREACHDTIME_SHIM_H

#include <sys/timerfd.h>
#include <sys/timex.h>

#endif
